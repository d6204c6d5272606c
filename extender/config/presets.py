"""Node label conventions that name a node's GPU type, per ecosystem.

Sources: NVIDIA GPU Feature Discovery label catalog, GKE node labels, Karpenter (AWS and Azure)
well-known labels; see ``../shared/reference/anchors.md`` section 4.3-4.4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABEL_VALUE_MAX = 63
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def is_label_value(value: str) -> bool:
    """Whether the API server takes ``value`` as a label value, and so in a node selector
    requirement's ``values`` (apimachinery ``IsValidLabelValue``): at most 63 characters of
    ``[-A-Za-z0-9_.]``, alphanumeric at both ends. ``RTX PRO 6000`` is a name the extender
    reads (Flyte's SDK string), never a value a node label holds."""
    return len(value) <= LABEL_VALUE_MAX and _LABEL_VALUE.match(value) is not None


LABEL_VALUE_RULE = "at most 63 characters of [A-Za-z0-9-_.], beginning and ending alphanumeric"


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

FLYTE = LabelPreset(
    name="flyte",
    # flytepropeller's defaults (flyteplugins/go/tasks/pluginmachinery/flytek8s/config/
    # config.go: GpuDeviceNodeLabel, GpuPartitionSizeNodeLabel); a platform that changed them
    # sets nodeLabels.flyte, and the mapper uses those keys instead.
    type_key="k8s.amazonaws.com/accelerator",
    partition_key="k8s.amazonaws.com/gpu-partition-size",
)

PRESETS: dict[str, LabelPreset] = {p.name: p for p in (GFD, GKE, EKS_KARPENTER, AKS, FLYTE)}

INSTANCE_TYPE_KEYS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
"""Well-known labels naming a node's cloud machine type (the deprecated beta key still appears
on older nodes)."""

MIG_STRATEGY_KEY = "nvidia.com/mig.strategy"
"""GFD: ``single`` or ``mixed``."""


def gfd_mig_profile(value: str) -> str | None:
    """The MIG profile of a single-strategy GFD product (``NVIDIA-A100-SXM4-80GB-MIG-1g.10gb``
    -> ``1g.10gb``; k8s-device-plugin ``internal/lm/resource.go`` appends ``-MIG-<profile>``),
    ``None`` for an unpartitioned product."""
    cut = value.find("-MIG-")
    if cut <= 0:
        return None
    profile = value[cut + len("-MIG-"):]
    shared = profile.find("-SHARED")
    return profile[:shared] if shared > 0 else profile or None


def clean_gfd_product(value: str) -> str:
    """GFD appends ``-SHARED`` (time-slicing without rename) and ``-MIG-<profile>`` (single
    strategy) to the product; the type is what comes before."""
    for marker in ("-MIG-", "-SHARED"):
        cut = value.find(marker)
        if cut > 0:
            value = value[:cut]
    return value
