"""What a strategy computes from a whole snapshot, kept for the last few snapshots.

Some of a strategy's inputs do not depend on the pod at all: the default strategy's "CPU to
spare" gate (free CPU and free GPUs of the whole cluster), its typed claims (free GPUs per
type) and the mean GPU price. Every call on the same snapshot (the replicas of a burst
before the next hold, an explanation after its score, a shadow or what-if on the served
snapshot) reads them from here instead of reducing the cluster again.

Keyed by identity: the snapshot (immutable) and the strategy's mix model (the values read
it); the record is the strategy's own (``make`` builds an empty one, the strategy fills its
fields lazily). Values that change one row per placement belong in the snapshot's
``RowCache`` instead (a new snapshot costs one row there, a whole rescan here).
Not locked: the kept tuple is swapped whole, and two threads filling the same field of a
record compute the same value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from extender.inventory.snapshot import ClusterSnapshot

T = TypeVar("T")

DEFAULT_SNAPSHOTS = 4
"""Snapshots remembered: a burst's calls all land on the newest one or two."""


class SnapshotMemo(Generic[T]):
    """One record per (snapshot, model) identity, the last ``snapshots`` of them."""

    def __init__(self, make: Callable[[], T], snapshots: int = DEFAULT_SNAPSHOTS) -> None:
        self._make = make
        self._snapshots = snapshots
        self._kept: tuple[tuple[ClusterSnapshot, object, T], ...] = ()
        self.hits = 0

    def record(self, snapshot: ClusterSnapshot, model: object) -> T:
        """The record of ``snapshot`` under ``model`` (a new, empty one on a miss)."""
        kept = self._kept
        for kept_snapshot, kept_model, record in kept:
            if kept_snapshot is snapshot and kept_model is model:
                self.hits += 1
                return record
        fresh = self._make()
        self._kept = ((snapshot, model, fresh), *kept[:self._snapshots - 1])
        return fresh
