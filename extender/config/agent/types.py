"""The node agent's settings as frozen typed objects (its own YAML file, ``--config``;
camelCase keys, docs/agent.md)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from extender.model import RESOURCE_GPU


class OverusePolicy(StrEnum):
    WARN = "warn"
    """A Warning Event on the pod, once per episode, and the metric."""
    EVICT = "evict"
    """The same, then the overusing pod is evicted (Eviction API: PodDisruptionBudgets hold)."""


@dataclass(frozen=True)
class TimeSlicingConfig:
    """Overrides the GFD labels (``nvidia.com/gpu.replicas`` & co.) for this node."""

    replicas: int = 0
    """Replicas per GPU; 0 or 1: not shared."""
    resource: str = RESOURCE_GPU
    """The resource the replicas are advertised as (``nvidia.com/gpu.shared`` under
    ``renameByDefault``)."""


@dataclass(frozen=True)
class AgentConfig:
    platform_config: str | None = None
    """The extender's platform config (its catalog names the GPUs); ``None``: the shipped
    defaults."""
    overuse_policy: OverusePolicy = OverusePolicy.WARN
    overuse_tolerance_mib: int = 0
    """Use above the declared VRAM plus this is overuse."""
    interval_s: float = 10.0
    """One pass every this many seconds."""
    metrics_port: int = 9401
    """The side listener (/metrics, /healthz, /readyz); 0: off."""
    metrics_host: str = "0.0.0.0"
    time_slicing: TimeSlicingConfig | None = None
    """``None``: read time-slicing from the node's GFD labels."""
