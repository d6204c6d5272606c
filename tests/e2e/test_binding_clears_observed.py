"""The Binding clears an ``assigned-observed`` the pod carried before it was bound, on the real
kube-apiserver (a Binding's annotations are copied over the pod's; one cannot be deleted, so
cleared is ``""``), and every reader takes ``""`` as absent: a restarted extender's books
count the extender's choice, not the owner's pre-set "correction" with the same amounts on
another GPU (issue 19's gap: ``/work/notes/prev/issue-19.md``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from extender.agent.pods import node_pod
from extender.apiserver.binder import Binder
from extender.apiserver.client import ApiServerClient
from extender.inventory.store import Inventory
from extender.kube.annotations import decode_assignment, encode_assignment
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_OBSERVED,
    Assignment,
    GpuGrant,
    PodKey,
    RequestKind,
)
from extender.platform import load_platform
from extender.sync.apply import InventoryApplier
from localcluster import LocalCluster
from tests.sync.clusters import t4_node

pytestmark = pytest.mark.e2e
T4_MIB, SHARE_MIB = 15360, 12288


def share(index: int) -> Assignment:
    return Assignment("n1", RequestKind.VRAM, (GpuGrant(index, SHARE_MIB),), "t4")


def test_the_binding_clears_a_pre_set_observed_and_the_books_count_the_choice(
        controlplane_binaries: object) -> None:
    with LocalCluster(None, None) as cluster:
        api = cluster.api()
        cluster.create_node("n1", {"nvidia.com/gpu": 8})
        # the owner writes a "correction" at creation (the webhook down): same amounts, GPU 3
        api.create_namespaced_pod("default", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {
                ANNOTATION_OBSERVED: encode_assignment(share(3))}},
            "spec": {"schedulerName": "nobody", "containers": [{
                "name": "main", "image": "registry.example/app:1",
                "resources": {"limits": {"gpu-extender.io/gpu-memory": "12Gi"}}}]}})
        created = api.read_namespaced_pod("p", "default")
        key = PodKey("default", "p", created.metadata.uid)

        Binder(ApiServerClient(cluster.api_client("gpu-extender"))).bind(key, "n1", share(0))

        response = api.read_namespaced_pod("p", "default", _preload_content=False)
        pod: dict[str, Any] = orjson.loads(response.data)
        annotations = pod["metadata"]["annotations"]
        assert pod["spec"]["nodeName"] == "n1"
        assert annotations[ANNOTATION_OBSERVED] == ""
        assert decode_assignment(annotations[ANNOTATION_ASSIGNED]) == share(0)

        # an extender that starts now (nothing remembered) lists the pod: GPU 0 is held,
        # GPU 3 is free (before, the pre-set value with the same amounts moved it to GPU 3)
        platform = load_platform()
        inventory = Inventory(platform.catalog)
        applier = InventoryApplier(platform, inventory)
        applier.replace_nodes([t4_node("n1", 8)])
        applier.replace_pods([pod])
        snapshot = inventory.snapshot()
        free = snapshot.free_mib[snapshot.node_index["n1"]][:8].tolist()
        assert free[0] == T4_MIB - SHARE_MIB and free[3] == T4_MIB  # 15360 - 12288 = 3072
        assert applier.untrusted_total == 0
        # nor do the pod decoder and the node agent read "" as a malformed correction
        assert platform.pods.decode(pod).problems == ()
        agent_view = node_pod(pod, "n1")
        assert (agent_view.observed, agent_view.observed_text, agent_view.problems) == \
            (None, None, ())
        assert agent_view.assignment == share(0)
