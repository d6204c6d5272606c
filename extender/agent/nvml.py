"""What the agent needs from NVML, as plain values, and the backend protocol.

Two backends implement it: ``nvml_pynvml`` (the real library) and ``nvml_fixture`` (a JSON file,
for machines without a GPU and for tests). Everything above this module sees only these values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class GpuProcess:
    """One compute process NVML sees on a GPU or MIG instance."""

    pid: int
    used_mib: int


@dataclass(frozen=True)
class MigInstanceState:
    profile: str
    """The device plugin's profile name (``1g.10gb``)."""
    start: int
    """Placement start slot."""
    uuid: str
    processes: tuple[GpuProcess, ...] = ()


@dataclass(frozen=True)
class GpuState:
    """One physical GPU as NVML reports it at one moment."""

    index: int
    uuid: str
    name: str
    """NVML's product name (``NVIDIA A100-SXM4-80GB``)."""
    memory_total_mib: int
    mig_enabled: bool = False
    mig_instances: tuple[MigInstanceState, ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    xid_errors: tuple[int, ...] = ()
    """XID events seen since the agent started (or in the fixture)."""
    retired_pages_pending: bool = False
    """Pages are waiting for retirement (needs a reset): NVIDIA treats this as unhealthy."""
    row_remap_failure: bool = False
    """A row remap failed: the memory cannot be repaired in the field."""
    lost: bool = False
    """The GPU stopped answering (``NVML_ERROR_GPU_IS_LOST``, XID 79)."""


@dataclass(frozen=True)
class NvmlSnapshot:
    driver_version: str
    gpus: tuple[GpuState, ...] = field(default_factory=tuple)


class NvmlBackend(Protocol):
    """Reads the node's GPUs. ``snapshot`` raises ``AgentError`` when NVML itself fails; a single
    GPU that fails is reported in its state (``lost``), never by raising."""

    def snapshot(self) -> NvmlSnapshot: ...

    def close(self) -> None: ...
