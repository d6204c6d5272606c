"""A pod typed by its own node selection, through the service's verbs: filter lets it onto the
protected pool it selects, explain says which rule typed it, and the typing follows the
inventory when a node joins."""

from __future__ import annotations

from typing import Any

from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.sync.offline import ClusterObjects


def gke_node(name: str, accelerator: str, pool: str, gpus: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {
                "cloud.google.com/gke-accelerator": accelerator,
                "cloud.google.com/gke-nodepool": pool}},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "8",
                                       "memory": "64Gi"}}}


POD = {"metadata": {"name": "train", "namespace": "ml", "uid": "u-train",
                    "resourceVersion": "1"},
       "spec": {"nodeSelector": {"cloud.google.com/gke-nodepool": "a100-pool"},
                "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def filter_args(names: list[str]) -> dict[str, Any]:
    return {"Pod": POD, "NodeNames": names, "Nodes": None}


def test_a_pool_selector_types_the_pod_and_explain_says_so(platform: Platform) -> None:
    service = ExtenderService.from_cluster_objects(platform, ClusterObjects(nodes=[
        gke_node("a100-0", "nvidia-tesla-a100", "a100-pool"),
        gke_node("t4-0", "nvidia-tesla-t4", "t4-pool")], pods=[]))
    service.start()
    try:
        report = service.verbs.explain(POD, ["a100-0"])
        assert report["nodes"][0]["verdict"] == "fits"
        assert report["typeSource"] == (
            "spec.nodeSelector[cloud.google.com/gke-nodepool]=a100-pool admits only "
            "a100-40gb GPU nodes")
        # A T4 joins the pool: the selection now admits an unprotected type, so the pod is
        # untyped again and protection keeps it off the A100.
        service.applier.node_event("ADDED", gke_node("t4-1", "nvidia-tesla-t4", "a100-pool"))
        report = service.verbs.explain(POD, ["a100-0", "t4-1"])
        verdicts = {n["node"]: n["verdict"] for n in report["nodes"]}
        assert verdicts == {"a100-0": "unresolvable", "t4-1": "fits"}
        assert report["typeSource"] == ""
    finally:
        service.stop()
