"""The ``demand:`` section (``gpu-extender demand``, the autoscaler bridge) as frozen typed
objects (YAML camelCase)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class DemandMode(StrEnum):
    """What the controller writes for GPUs that no node has."""

    UTILITY_PODS = "utility-pods"
    """Lowest-priority pods asking whole ``nvidia.com/gpu`` with the type's affinity: any
    autoscaler that acts on unschedulable pods (Karpenter, Cluster Autoscaler)."""
    PROVISIONING_REQUEST = "provisioning-request"
    """``autoscaling.x-k8s.io/v1`` ProvisioningRequests with PodTemplates (Cluster Autoscaler
    with ``--enable-provisioning-requests``)."""


class ProvisioningClass(StrEnum):
    BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up"
    CHECK_CAPACITY = "check-capacity"

    @property
    def class_name(self) -> str:
        """``spec.provisioningClassName`` as Cluster Autoscaler spells it."""
        return f"{self.value}.autoscaling.x-k8s.io"


DEFAULT_PRIORITY_CLASS = "gpu-extender-demand"


@dataclass(frozen=True)
class DemandConfig:
    mode: DemandMode = DemandMode.UTILITY_PODS
    types: tuple[str, ...] | None = None
    """Catalog names (ids, families, aliases) an autoscaler can provide. ``None``: every
    unprotected type for untyped pods, the types they name for typed pods."""
    debounce_seconds: float = 30.0
    """A pod waits this long after its ``PodScheduled=False`` before it becomes demand."""
    cooldown_seconds: float = 120.0
    """A demand object lives at least this long unless the pods it serves bound or went."""
    provisioning_class: ProvisioningClass = ProvisioningClass.BEST_EFFORT_ATOMIC
    namespace: str | None = None
    """Where demand objects live. ``None``: the controller's own namespace."""
    priority_class_name: str = DEFAULT_PRIORITY_CLASS
    """Of utility pods: a PriorityClass below zero with ``preemptionPolicy: Never``."""
    gpus_per_node: int = 1
    """GPUs of one new node (the shape demand asks for)."""
    gpus_per_node_by_type: Mapping[str, int] = field(default_factory=dict)
    """Per catalog type id: overrides ``gpus_per_node``."""
    image: str = "registry.k8s.io/pause:3.10"
    """The utility pods' container image (does nothing)."""

    def gpus_for(self, type_id: str) -> int:
        return int(self.gpus_per_node_by_type.get(type_id, self.gpus_per_node))
