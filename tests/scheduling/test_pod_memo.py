"""Pods that differ only in their identity decode once (``DecodeMemo``); anything the decode
reads makes another entry, and a decode that depends on the inventory's nodes is answered only
on those nodes."""

from __future__ import annotations

import copy
from typing import Any

from extender.kube.objects import pod_key, resource_version
from extender.kube.pod_content import content_key
from extender.platform import Platform
from extender.scheduling.pod_memo import DecodeMemo
from extender.scheduling.pods import DecodedPod, decode_pod
from extender.server.service import ExtenderService
from extender.sync.offline import ClusterObjects
from tests.server.test_selection_typing import POD as SELECTED_POD
from tests.server.test_selection_typing import gke_node


def replica(serial: int, **changes: Any) -> dict[str, Any]:
    """One replica of a Deployment's pod: its own name, UID, version and timestamps."""
    pod: dict[str, Any] = {
        "metadata": {"name": f"web-{serial}", "namespace": "ml", "uid": f"uid-{serial}",
                     "resourceVersion": str(100 + serial),
                     "creationTimestamp": f"2026-01-01T00:00:{serial:02d}Z",
                     "labels": {"app": "web", "gpu-extender.io/accelerator": "l4"}},
        "spec": {"containers": [{"name": "main", "resources": {
            "limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "2", "memory": "8Gi"}}}]},
        "status": {"phase": "Pending",
                   "conditions": [{"type": "PodScheduled", "status": "False",
                                   "lastTransitionTime": f"2026-01-01T00:01:{serial:02d}Z"}]}}
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        part = pod
        for name in parents:
            part = part[name]
        part[leaf] = value
    return pod


def decode(memo: DecodeMemo, pod: dict[str, Any], nodes: Any = None) -> DecodedPod:
    return memo.decode(pod, pod_key(pod), resource_version(pod), nodes)


def test_a_replica_is_the_first_ones_decode_under_its_own_identity(platform: Platform) -> None:
    memo = DecodeMemo(platform)
    first = decode(memo, replica(1))
    second = decode(memo, replica(2))
    assert memo.hits == 1
    assert (second.key.name, second.key.uid, second.resource_version) == \
        ("web-2", "uid-2", "102")
    # the same decode otherwise: the very request object, so per-request caches are shared
    assert second.placement is first.placement and second.request is first.request
    fresh = decode_pod(platform, replica(2), pod_key(replica(2)), "102")
    assert (second.request, second.cpu_milli, second.memory_mib, second.error) == \
        (fresh.request, fresh.cpu_milli, fresh.memory_mib, fresh.error)


def test_every_part_the_decode_reads_is_in_the_key(platform: Platform) -> None:
    memo = DecodeMemo(platform)
    decode(memo, replica(1))
    variants = {
        "metadata.namespace": "research",  # protection is per namespace
        "metadata.labels": {"app": "web", "gpu-extender.io/accelerator": "t4"},
        "metadata.annotations": {"gpu-extender.io/gpu-memory": "4Gi"},
        "spec.containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
        "status.phase": "Failed",
    }
    for path, value in variants.items():
        pod = replica(2, **{path: value})
        assert content_key(pod) != content_key(replica(1)), path
        got = decode(memo, pod)
        want = decode_pod(platform, pod, pod_key(pod), resource_version(pod))
        assert (got.request, got.error, got.placement is None) == \
            (want.request, want.error, want.placement is None), path
    assert memo.hits == 0
    assert decode(memo, replica(3, **{"spec.containers": variants["spec.containers"]})) \
        .request.count == 2  # type: ignore[union-attr]
    assert memo.hits == 1


def test_invalid_pods_are_decoded_every_time(platform: Platform) -> None:
    memo = DecodeMemo(platform)
    bad_request = replica(1, **{"spec.containers": [
        {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "half"}}}]})
    bad_shape = replica(2, **{"metadata.labels": {"app": 7}})
    for pod in (bad_request, copy.deepcopy(bad_request), bad_shape, copy.deepcopy(bad_shape)):
        got = decode(memo, pod)
        want = decode_pod(platform, pod, pod_key(pod), resource_version(pod))
        assert got.error is not None and got.error == want.error
    assert memo.hits == 0
    not_json = replica(3)
    not_json["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": {1, 2}}
    assert content_key(not_json) is None  # a set: no key, decoded as before (and refused)
    assert decode(memo, not_json).error is not None


def test_a_decode_typed_by_the_nodes_holds_only_for_those_nodes(platform: Platform) -> None:
    service = ExtenderService.from_cluster_objects(platform, ClusterObjects(nodes=[
        gke_node("a100-0", "nvidia-tesla-a100", "a100-pool"),
        gke_node("t4-0", "nvidia-tesla-t4", "t4-pool")], pods=[]))
    service.start()
    try:
        memo = DecodeMemo(platform)
        nodes = service.inventory.snapshot().nodes
        typed = decode(memo, SELECTED_POD, nodes)
        assert typed.typed_against is nodes and typed.placement is not None
        assert typed.placement.request.types is not None  # typed a100 by its pool
        assert decode(memo, copy.deepcopy(SELECTED_POD), nodes).placement is typed.placement
        assert memo.hits == 1
        # a T4 joins the pool: a new node map, decoded anew (untyped now)
        service.applier.node_event("ADDED", gke_node("t4-1", "nvidia-tesla-t4", "a100-pool"))
        later = service.inventory.snapshot().nodes
        again = decode(memo, SELECTED_POD, later)
        assert memo.hits == 1 and again.typed_against is later
        assert again.placement is not None and again.placement.request.types is None
    finally:
        service.stop()


# -- the key covers every read ---------------------------------------------------------------

class _Recorded(dict[str, Any]):
    """A JSON object that notes the path of every field read (``metadata.labels.app``; ``*``
    for a read of every field, ``[]`` for a list's items)."""

    def __init__(self, data: dict[str, Any], path: str, seen: set[str]) -> None:
        super().__init__(data)
        self._path, self._seen = path, seen

    def _at(self, key: object) -> str:
        return f"{self._path}.{key}" if self._path else str(key)

    def __getitem__(self, key: str) -> Any:
        self._seen.add(self._at(key))
        return _recorded(super().__getitem__(key), self._at(key), self._seen)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self._seen.add(self._at(key))
        return self[key] if dict.__contains__(self, key) else default

    def __contains__(self, key: object) -> bool:
        self._seen.add(self._at(key))
        return dict.__contains__(self, key)

    def items(self) -> Any:
        self._seen.add(self._at("*"))
        return [(k, _recorded(v, self._at(k), self._seen)) for k, v in super().items()]

    def values(self) -> Any:
        return [v for _, v in self.items()]

    def __iter__(self) -> Any:
        self._seen.add(self._at("*"))
        return super().__iter__()


def _recorded(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, dict):
        return _Recorded(value, path, seen)
    if isinstance(value, list):
        return [_recorded(item, f"{path}[]", seen) for item in value]
    return value


_KEYED = ("metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion",
          "metadata.labels", "metadata.annotations", "status.phase",
          *(f"spec.{name}" for name in ("nodeName", "nodeSelector", "affinity", "overhead")),
          *(f"spec.{field}[].{name}" for field in ("containers", "initContainers")
            for name in ("name", "restartPolicy", "resources")))
"""What ``content_key`` encodes (the identity fields: what the memo re-keys)."""
_SECTIONS = ("metadata", "status", "spec", "spec.containers", "spec.initContainers")


def _outside_the_key(paths: set[str]) -> set[str]:
    return {p for p in paths if p not in _SECTIONS
            and not any(p == k or p.startswith((k + ".", k + "[")) for k in _KEYED)}


def test_the_decode_reads_nothing_outside_the_key(platform: Platform) -> None:
    rich = replica(1, **{
        "metadata.annotations": {"gpu-extender.io/gpu-types": "l4"},
        "spec.nodeSelector": {"cloud.google.com/gke-nodepool": "pool"},
        "spec.affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        "spec.overhead": {"cpu": "100m"},
        "spec.initContainers": [{"name": "side", "restartPolicy": "Always",
                                 "resources": {"requests": {"cpu": "1"}}}],
        "spec.volumes": [{"name": "kube-api-access-x7k2p", "projected": {}}]})
    share = replica(2, **{"spec.containers": [
        {"name": "a", "resources": {"limits": {"gpu-extender.io/gpu-memory": "6Gi"}},
         "volumeMounts": [{"name": "kube-api-access-x7k2p"}]}]})
    for pod in (replica(3), rich, share, SELECTED_POD):
        seen: set[str] = set()
        decoded = decode_pod(platform, _recorded(pod, "", seen), pod_key(pod),
                             resource_version(pod), checked=True)
        assert decoded.error is None
        assert "spec.containers[].resources" in seen  # the recorder sees the reads
        assert _outside_the_key(seen) == set()
    # and the parts outside the key do not change it: another token volume, same key
    other = copy.deepcopy(rich)
    other["spec"]["volumes"][0]["name"] = "kube-api-access-9qz4m"
    other["spec"]["schedulerName"] = "gpu-scheduler"
    assert content_key(other) == content_key(rich)
