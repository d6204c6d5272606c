"""The pod watch's decode by content (``PodInfoMemo``): a burst's replicas decode once, each
answered exactly as its own decode would be; anything the decode reads is another entry.
(That the key covers every read of the decode: ``tests/scheduling/test_pod_memo.py``, whose
``decode_pod`` runs ``PodDecoder.decode``.)"""

from __future__ import annotations

import copy

import pytest

from extender.kube.pod_content import PodInfoMemo
from extender.platform import Platform
from tests.scheduling.test_pod_memo import replica


def test_replicas_decode_once_and_each_answer_is_its_own_decode(platform: Platform) -> None:
    memo = PodInfoMemo(platform.pods)
    for serial in range(5):
        pod = replica(serial, **{"spec.volumes": [{"name": f"kube-api-access-{serial}"}]})
        assert memo.decode(pod) == platform.pods.decode(pod)  # its own name, UID
    assert memo.hits == 4  # the first decoded, four looked up


@pytest.mark.parametrize(("path", "value"), [
    ("spec.nodeName", "n1"),  # a bound replica: its node
    ("status.phase", "Succeeded"),  # terminal
    ("metadata.annotations", {"gpu-extender.io/assigned": "n1:0:l4:whole"}),
    ("metadata.namespace", "other"),
    ("spec.containers", [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]),
])
def test_a_read_field_that_differs_is_decoded_anew(platform: Platform, path: str,
                                                    value: object) -> None:
    memo = PodInfoMemo(platform.pods)
    memo.decode(replica(0))
    changed = replica(1, **{path: value})
    assert memo.decode(changed) == platform.pods.decode(changed)
    assert memo.hits == 0


def test_a_decode_with_problems_is_not_kept(platform: Platform) -> None:
    memo = PodInfoMemo(platform.pods)
    bad = replica(0, **{"spec.containers": [{"name": "main", "resources": {
        "limits": {"nvidia.com/gpu": "half"}}}]})
    first = memo.decode(bad)
    assert first.problems and first.request is None
    assert memo.decode(copy.deepcopy(bad)) == first and memo.hits == 0


def test_a_pod_of_the_wrong_shape_reports_its_path(platform: Platform) -> None:
    memo = PodInfoMemo(platform.pods)
    info = memo.decode(replica(0, **{"metadata.labels": ["not", "a", "map"]}))
    assert info.problems == ('invalid pod: metadata.labels=["not","a","map"]: must be an '
                             'object of string values',)


def test_the_least_recently_used_content_goes(platform: Platform) -> None:
    memo = PodInfoMemo(platform.pods, capacity=2)
    one, two, three = (replica(0, **{"metadata.namespace": ns}) for ns in ("a", "b", "c"))
    for pod in (one, two, one, three):  # ``two`` is the least recently used when three comes
        memo.decode(pod)
    assert memo.hits == 1
    memo.decode(one)
    memo.decode(two)
    assert memo.hits == 2  # one kept, two decoded again
