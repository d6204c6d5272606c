"""What a pod holds on a node, and the report of applying it (the store's and the grants'
vocabulary; ``extender.inventory.store`` re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from extender.model import Assignment, PodKey


class HoldingState(Enum):
    ASSUMED = "reserved"
    """The value stays ``reserved``: it is the ``state`` label of the holdings metric."""
    BOUND = "bound"
    OBSERVED = "observed"


@dataclass(frozen=True)
class Holding:
    """What one pod holds on one node."""

    key: PodKey
    node: str
    assignment: Assignment | None
    cpu_milli: int = 0
    memory_mib: int = 0
    state: HoldingState = HoldingState.OBSERVED
    expires_at: float | None = None


@dataclass
class ApplyReport:
    """Problems met while applying observed state (over-commit, unknown GPU index...)."""

    conflicts: list[str] = field(default_factory=list)
