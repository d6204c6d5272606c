"""The real kube-scheduler calls the real gpu-extender: types, protection, MIG, VRAM shares,
and the reasons users see when a pod fits nowhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.gpu_helpers import (
    DEFAULT_PROFILE_CONFIG,
    assignment,
    create_pods,
    gpu_cluster,
    gpu_pod,
    make_priced_fleet,
    wait_bound,
    wait_rejected,
)

pytestmark = pytest.mark.e2e
E2E_DATA = Path(__file__).parent / "data"

# One A100-80GB node per label convention, plus a T4 node that must never win for typed pods.
PRESET_NODES = {
    "gfd": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "2"},
    "gke": {"cloud.google.com/gke-accelerator": "nvidia-a100-80gb"},
    "eks-karpenter": {"karpenter.k8s.aws/instance-gpu-name": "a100",
                      "karpenter.k8s.aws/instance-gpu-memory": "81920"},
    "aks": {"karpenter.azure.com/sku-gpu-name": "A100"},
}


@pytest.mark.parametrize(
    ("preset", "alias"),
    [
        ("gfd", "a100-80gb"),
        ("gke", "nvidia-a100-80gb"),
        ("eks-karpenter", "NVIDIA-A100-SXM4-80GB"),
        ("aks", "a100"),
    ],
    ids=[
        "GFD product label, canonical id in the pod",
        "GKE accelerator label, GKE spelling in the pod",
        "Karpenter name + memory labels, GFD spelling in the pod",
        "AKS sku label, family name in the pod",
    ],
)
def test_typed_pod_lands_on_its_type_through_every_label_preset(
        controlplane_binaries: object, preset: str, alias: str) -> None:
    with gpu_cluster() as cluster:
        cluster.create_node("t4-0", {"nvidia.com/gpu": 4},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"})
        cluster.create_node(f"a100-{preset}", {"nvidia.com/gpu": 2},
                            labels=PRESET_NODES[preset])
        create_pods(cluster, [gpu_pod("typed", {"nvidia.com/gpu": 1},
                                      labels={"gpu-extender.io/accelerator": alias})])
        node = wait_bound(cluster, "typed")
        assert node == f"a100-{preset}"
        result = assignment(cluster.api(), "typed")
        # AKS says only "A100": without a memory label the node is the smaller A100 (40 GB),
        # which the family name `a100` accepts.
        expected = "a100-40gb" if preset == "aks" else "a100-80gb"
        assert result.type_id == expected
        assert len(result.grants) == 1 and result.grants[0].whole


def test_untyped_pods_fill_the_unprotected_gpus_then_wait_naming_the_protection(
        controlplane_binaries: object) -> None:
    # Default strategy: four untyped 1-GPU pods fill the T4 and L4 nodes (fragmentation first,
    # used nodes before idle ones); the fifth stays Pending although the A100 and H100 nodes
    # are idle, and the event names the protection.
    with gpu_cluster() as cluster:
        make_priced_fleet(cluster)
        nodes = []
        for i in range(4):
            create_pods(cluster, [gpu_pod(f"untyped-{i}", {"nvidia.com/gpu": 1})])
            nodes.append(wait_bound(cluster, f"untyped-{i}"))
        assert sorted(nodes) == ["l4-0", "l4-0", "t4-0", "t4-0"]
        assert nodes[0] == nodes[1]  # the second pod joins the node the first one opened
        create_pods(cluster, [gpu_pod("overflow", {"nvidia.com/gpu": 1})])
        message = wait_rejected(cluster, "overflow")
        assert "protected" in message
        assert "a100-80gb" in message and "h100-80gb" in message


def test_pods_naming_several_types_take_the_cheapest_one_first(
        controlplane_binaries: object) -> None:
    # "t4,l4" under the default strategy: equal fragmentation, so the pod's own types go by
    # price: T4 (0.53 $/h) before L4 (0.80).
    with gpu_cluster() as cluster:
        make_priced_fleet(cluster)
        for i in range(4):
            create_pods(cluster, [gpu_pod(f"either-{i}", {"nvidia.com/gpu": 1},
                                          annotations={"gpu-extender.io/accelerators": "l4,t4"})])
            assert wait_bound(cluster, f"either-{i}") == ("t4-0" if i < 2 else "l4-0")


def test_the_cheapest_first_strategy_sends_untyped_pods_to_the_cheapest_type(
        controlplane_binaries: object) -> None:
    with gpu_cluster(extender_config=E2E_DATA / "cheapest-first.yaml") as cluster:
        make_priced_fleet(cluster)
        for i in range(4):
            create_pods(cluster, [gpu_pod(f"cheap-{i}", {"nvidia.com/gpu": 1})])
            assert wait_bound(cluster, f"cheap-{i}") == ("t4-0" if i < 2 else "l4-0")
        create_pods(cluster, [gpu_pod("overflow", {"nvidia.com/gpu": 1})])
        assert "protected" in wait_rejected(cluster, "overflow")


def test_mig_slices_fill_a_partitioned_a100_and_the_eighth_waits(
        controlplane_binaries: object) -> None:
    # 1g.10gb on an A100-80GB: 7 legal start slots (0..6), so 7 instances fit and the 8th not.
    with gpu_cluster() as cluster:
        cluster.create_node("a100-mig", {"nvidia.com/mig-1g.10gb": 7},
                            labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                    "nvidia.com/mig.strategy": "mixed"})
        pods = [gpu_pod(f"mig-{i}", {"nvidia.com/mig-1g.10gb": 1}) for i in range(8)]
        create_pods(cluster, pods[:7])
        starts = set()
        for i in range(7):
            assert wait_bound(cluster, f"mig-{i}") == "a100-mig"
            grant, = assignment(cluster.api(), f"mig-{i}").grants
            assert grant.mig_profile == "1g.10gb"
            starts.add(grant.mig_start)
        assert starts == set(range(7))
        create_pods(cluster, pods[7:])
        wait_rejected(cluster, "mig-7")


def test_four_4gi_shares_fill_one_t4_and_the_fifth_takes_another_gpu(
        controlplane_binaries: object) -> None:
    # T4: 16384 MiB. 4 x 4096 = 16384 fits exactly on one GPU (best fit keeps filling it);
    # the fifth 4096 MiB share needs the second GPU.
    with gpu_cluster() as cluster:
        cluster.create_node("t4-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"})
        gpus = []
        for i in range(5):
            create_pods(cluster, [gpu_pod(f"share-{i}", {"gpu-extender.io/gpu-memory": "4Gi"})])
            assert wait_bound(cluster, f"share-{i}") == "t4-0"
            grant, = assignment(cluster.api(), f"share-{i}").grants
            assert grant.vram_mib == 4096
            gpus.append(grant.index)
        assert gpus[:4] == [gpus[0]] * 4
        assert gpus[4] != gpus[0]


def test_a_pod_that_fits_nowhere_is_told_why_per_node_group(
        controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        cluster.create_node("t4-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"})
        cluster.create_node("l4-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "NVIDIA-L4"})
        cluster.create_node("h100-0", {"nvidia.com/gpu": 8},
                            labels={"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"})
        cluster.create_node("cpu-0", {})
        # 3 x L4: the T4, L4 and CPU nodes have fewer than 3 GPUs (kube-scheduler's own count
        # check says so), the H100 node has enough GPUs of the wrong type (the extender says
        # so).
        create_pods(cluster, [gpu_pod("big", {"nvidia.com/gpu": 3},
                                      labels={"gpu-extender.io/accelerator": "l4"})])
        message = wait_rejected(cluster, "big")
        assert "Insufficient nvidia.com/gpu" in message  # t4-0 and cpu-0, from kube-scheduler
        assert "h100-80gb" in message                      # wrong type, from the extender
        create_pods(cluster, [gpu_pod("unknown-type", {"nvidia.com/gpu": 1},
                                      labels={"gpu-extender.io/accelerator": "a10O"})])
        message = wait_rejected(cluster, "unknown-type")
        assert "unknown GPU type" in message and "a10g" in message


def test_the_default_scheduler_profile_with_the_extender_places_gpu_pods(
        controlplane_binaries: object) -> None:
    with gpu_cluster(DEFAULT_PROFILE_CONFIG) as cluster:
        cluster.create_node("l4-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "NVIDIA-L4"})
        cluster.create_node("a100-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"})
        create_pods(cluster, [
            gpu_pod("plain", {"nvidia.com/gpu": 1}, scheduler="default-scheduler"),
            gpu_pod("typed", {"nvidia.com/gpu": 2}, scheduler="default-scheduler",
                    node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
        ])
        assert wait_bound(cluster, "plain") == "l4-0"
        assert wait_bound(cluster, "typed") == "a100-0"
        assert assignment(cluster.api(), "typed").gpu_indices == (0, 1)


