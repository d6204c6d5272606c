"""Per-GPU cluster state: the mutable store and the immutable snapshots it hands out."""

from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Holding, HoldingState, Inventory

__all__ = ["ClusterSnapshot", "Holding", "HoldingState", "Inventory"]
