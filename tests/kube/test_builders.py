"""The test builders produce JSON shaped like the API server's (camelCase, string quantities)."""

from __future__ import annotations

from tests.builders import expr, gpu_entry, make_node, make_pod, static_mig


def test_make_pod_builds_api_server_json() -> None:
    pod = (make_pod("p").namespace("ml").gpus(2).accelerator("a100")
           .init_container(limits={"nvidia.com/gpu": 1}).sidecar(requests={"cpu": "100m"})
           .node_affinity_term(expr("nvidia.com/gpu.product", "In", "Tesla-T4")).obj())
    assert pod["metadata"] == {"name": "p", "namespace": "ml", "uid": "uid-p",
                               "labels": {"gpu-extender.io/accelerator": "a100"}}
    assert pod["spec"]["containers"] == [
        {"name": "c0", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
    init, sidecar = pod["spec"]["initContainers"]
    assert init["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert "restartPolicy" not in init
    assert sidecar["restartPolicy"] == "Always"
    required = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert required == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]}]}]}


def test_obj_returns_an_independent_copy() -> None:
    builder = make_pod().gpus(1)
    first = builder.obj()
    first["spec"]["containers"].clear()
    assert len(builder.obj()["spec"]["containers"]) == 1


def test_make_node_builds_labels_allocatable_and_annotation() -> None:
    node = (make_node("n1").gfd("NVIDIA-A100-SXM4-80GB", count=8, memory=81920)
            .allocatable(gpu=8).mig({"1g.10gb": 7})
            .gpus_annotation([gpu_entry(0, "a100-80gb", 81920,
                                        mig=static_mig(("1g.10gb", 0)))]).obj())
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.memory"] == "81920"
    assert labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["nvidia.com/mig-1g.10gb.count"] == "7"
    allocatable = node["status"]["allocatable"]
    assert allocatable["nvidia.com/gpu"] == "8"
    assert allocatable["nvidia.com/mig-1g.10gb"] == "7"
    assert node["metadata"]["annotations"]["gpu-extender.io/gpus"].startswith('{"version":1,')
