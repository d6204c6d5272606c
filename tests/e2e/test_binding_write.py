"""The one-write bind, checked against the real kube-apiserver: a Binding's annotations land on
the pod in the same update as spec.nodeName, existing annotations stay, and a retried bind to
the same node is still a success (409 idempotence)."""

from __future__ import annotations

import orjson
import pytest

from extender.apiserver.binder import Binder
from extender.apiserver.client import ApiServerClient
from extender.apiserver.errors import Conflict
from extender.kube.annotations import decode_assignment
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_VISIBLE_DEVICES,
    Assignment,
    GpuGrant,
    PodKey,
    RequestKind,
)
from localcluster import LocalCluster

pytestmark = pytest.mark.e2e


def test_the_binding_carries_the_assignment_onto_the_pod_in_one_write(
        controlplane_binaries: object) -> None:
    with LocalCluster(None, None) as cluster:
        api = cluster.api()
        cluster.create_node("n1", {"nvidia.com/gpu": 4})
        api.create_namespaced_pod("default", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"team": "ml"}},
            "spec": {"schedulerName": "nobody",
                     "containers": [{"name": "main", "image": "registry.example/app:1"}]}})
        created = api.read_namespaced_pod("p", "default")
        key = PodKey("default", "p", created.metadata.uid)
        writer = ApiServerClient(cluster.api_client("gpu-extender"))
        assignment = Assignment("n1", RequestKind.WHOLE, (GpuGrant(2, 15360, whole=True),), "t4")

        Binder(writer).bind(key, "n1", assignment)

        bound = api.read_namespaced_pod("p", "default")
        annotations = bound.metadata.annotations
        assert bound.spec.node_name == "n1"
        assert decode_assignment(annotations[ANNOTATION_ASSIGNED]) == assignment
        assert annotations[ANNOTATION_VISIBLE_DEVICES] == "2"
        assert annotations["team"] == "ml", "the pod's own annotations are kept"
        # exactly one write since creation: the watch from the created version shows one
        # MODIFIED event, and it already has both the node and the annotations
        stream = api.list_namespaced_pod(
            "default", watch=True, resource_version=created.metadata.resource_version,
            timeout_seconds=2, _preload_content=False)
        events = [orjson.loads(line) for line in stream.data.splitlines() if line]
        assert [e["type"] for e in events] == ["MODIFIED"]
        first = events[0]["object"]
        assert first["spec"]["nodeName"] == "n1"
        assert ANNOTATION_ASSIGNED in first["metadata"]["annotations"]

        # kube-scheduler retrying a bind whose answer it lost: a success, nothing changes
        Binder(writer).bind(key, "n1", assignment)
        with pytest.raises(Conflict, match="already bound to node 'n1'"):
            Binder(writer).bind(key, "n2", assignment)
