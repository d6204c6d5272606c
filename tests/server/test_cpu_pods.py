"""Issue 19, finding 9: a pod that asks for no GPU is never refused for our annotations.

``/validate`` admits a CPU-only pod with a malformed ``assigned-observed``; filter refused it on
every node (only ``assigned`` was exempted), so it could never be scheduled.
"""

from __future__ import annotations

import pytest

from extender.model import ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED
from extender.platform import Platform
from extender.server.wire import ExtenderArgs
from tests.builders import make_pod
from tests.server.conftest import online_service
from tests.sync.clusters import t4_node
from tests.sync.fake_api import FakeApiServer


@pytest.mark.parametrize("annotation", [ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED])
@pytest.mark.parametrize("text", ["{not json", '{"version": 1, "node": "n", "kind": "whole", '
                                  '"gpus": [{"index": 0, "uuid": ["x"]}]}'])
def test_a_cpu_pod_with_a_malformed_assignment_passes_filter(
        platform: Platform, annotation: str, text: str) -> None:
    service = online_service(platform, FakeApiServer([t4_node("t4-0"), t4_node("t4-1")]))
    pod = make_pod("cpu").namespace("ml").uid("uid-cpu").annotation(annotation, text).obj()
    answer = service.verbs.filter(ExtenderArgs(Pod=pod, Nodes=None,
                                               NodeNames=["t4-0", "t4-1"])).document()
    assert answer["Error"] == ""
    assert answer["NodeNames"] == ["t4-0", "t4-1"]
