"""kube-scheduler's NodeResourcesFit strategies on the GPU dimension.

Details (``least_allocated.go``, ``most_allocated.go``): with ``capacity`` the node's GPUs and
``requested`` the GPU-equivalents in use plus what the pod would take on its best GPU::

    LeastAllocated = (capacity - requested) * MAX_SCORE / capacity
    MostAllocated  = requested * MAX_SCORE / capacity

``requested`` is clamped to ``capacity``; a node without GPUs scores 0.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.scoring.base import MAX_SCORE, ScoreResult, StatelessStrategy
from extender.core.scoring.capacity import unit_take, used_total
from extender.core.scoring.helpers import fitting, no_choice
from extender.inventory.snapshot import ClusterSnapshot


def requested_share(snapshot: ClusterSnapshot, req: PlacementRequest,
                    fit: FitResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, requested, capacity) for the fitting nodes."""
    positions, rows = fitting(fit)
    used, count = used_total(snapshot, rows)
    requested = used + unit_take(snapshot, req, rows, fit.units[positions]) * req.count
    capacity = count.astype(np.float64)
    return rows, np.minimum(requested, capacity), capacity


class _AllocationScorer(StatelessStrategy):
    """kube's ``resourceAllocationScorer``: ``share * MAX_SCORE / capacity`` per node, with
    ``share`` the strategy's part of the node's GPUs (``_share``)."""

    @staticmethod
    def _share(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        rows, requested, capacity = requested_share(snapshot, req, fit)
        safe = np.maximum(capacity, 1.0)
        scores = np.where(capacity > 0, self._share(requested, capacity) * MAX_SCORE / safe, 0.0)
        return ScoreResult(rows, scores, no_choice(len(rows)))


class LeastAllocated(_AllocationScorer):
    NAME: ClassVar[str] = "least-allocated"

    @staticmethod
    def _share(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        return capacity - requested


class MostAllocated(_AllocationScorer):
    NAME: ClassVar[str] = "most-allocated"

    @staticmethod
    def _share(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        return requested
