"""The demo fleet: one node group per way a cluster describes its GPUs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from localcluster import LocalCluster


@dataclass(frozen=True)
class DemoNode:
    name: str
    description: str
    resources: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


FLEET: tuple[DemoNode, ...] = (
    DemoNode(
        "a100-whole-0", "8x A100-80GB, GKE labels",
        {"nvidia.com/gpu": 8},
        {"cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
         "cloud.google.com/gke-accelerator-count": "8"},
    ),
    DemoNode(
        "a100-mig-0", "1x A100-80GB partitioned 7x 1g.10gb (GFD, mixed MIG strategy)",
        {"nvidia.com/mig-1g.10gb": 7},
        {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/mig.strategy": "mixed"},
    ),
    DemoNode(
        "h100-0", "8x H100-80GB, GKE labels",
        {"nvidia.com/gpu": 8},
        {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
    ),
    DemoNode(
        "l4-0", "4x L4, Karpenter labels",
        {"nvidia.com/gpu": 4},
        {"karpenter.k8s.aws/instance-gpu-name": "l4",
         "karpenter.k8s.aws/instance-gpu-count": "4"},
    ),
    DemoNode(
        "t4-shared-0", "2x T4 time-sliced into 4 replicas each (GFD, renameByDefault)",
        {"nvidia.com/gpu.shared": 8},
        {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "2",
         "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"},
    ),
    DemoNode(
        "a10g-0", "1x A10G, Karpenter labels",
        {"nvidia.com/gpu": 1},
        {"karpenter.k8s.aws/instance-gpu-name": "a10g"},
    ),
)


def create_fleet(cluster: LocalCluster) -> None:
    for node in FLEET:
        cluster.create_node(node.name, node.resources, labels=node.labels,
                            annotations=node.annotations)
