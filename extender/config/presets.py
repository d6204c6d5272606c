"""Node label conventions that name a node's GPU type, per ecosystem.

Sources: NVIDIA GPU Feature Discovery label catalog, GKE node labels, Karpenter (AWS and Azure)
well-known labels; see ``../shared/reference/anchors.md`` section 4.3-4.4.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabelPreset:
    """The label keys one ecosystem uses; ``None`` where it has no such label."""

    name: str
    type_key: str
    memory_key: str | None = None
    """Per-GPU memory in MiB."""
    count_key: str | None = None
    """Physical GPUs on the node."""
    replicas_key: str | None = None
    """Time-slicing replicas per GPU."""
    sharing_key: str | None = None
    """Sharing strategy (``time-slicing``, ``time-sharing``, ``mps``)."""
    partition_key: str | None = None
    """MIG profile of a single-strategy partitioned node (GKE)."""


GFD = LabelPreset(
    name="gfd",
    type_key="nvidia.com/gpu.product",
    memory_key="nvidia.com/gpu.memory",
    count_key="nvidia.com/gpu.count",
    replicas_key="nvidia.com/gpu.replicas",
    sharing_key="nvidia.com/gpu.sharing-strategy",
)
GKE = LabelPreset(
    name="gke",
    type_key="cloud.google.com/gke-accelerator",
    count_key="cloud.google.com/gke-accelerator-count",
    replicas_key="cloud.google.com/gke-max-shared-clients-per-gpu",
    sharing_key="cloud.google.com/gke-gpu-sharing-strategy",
    partition_key="cloud.google.com/gke-gpu-partition-size",
)
EKS_KARPENTER = LabelPreset(
    name="eks-karpenter",
    type_key="karpenter.k8s.aws/instance-gpu-name",
    memory_key="karpenter.k8s.aws/instance-gpu-memory",
    count_key="karpenter.k8s.aws/instance-gpu-count",
)
AKS = LabelPreset(
    name="aks",
    type_key="karpenter.azure.com/sku-gpu-name",
    count_key="karpenter.azure.com/sku-gpu-count",
)

PRESETS: dict[str, LabelPreset] = {p.name: p for p in (GFD, GKE, EKS_KARPENTER, AKS)}

MIG_STRATEGY_KEY = "nvidia.com/mig.strategy"
"""GFD: ``single`` or ``mixed``."""


def clean_gfd_product(value: str) -> str:
    """GFD appends ``-SHARED`` (time-slicing without rename) and ``-MIG-<profile>`` (single
    strategy) to the product; the type is what comes before."""
    for marker in ("-MIG-", "-SHARED"):
        cut = value.find(marker)
        if cut > 0:
            value = value[:cut]
    return value
