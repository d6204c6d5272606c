"""The default: the cheapest GPU that fits first, then the placement that fragments least.

Details: each fitting node gets a key, compared lexicographically::

    1. cost   = price of the GPU type x the share of it the pod takes (USD/h), in cents
    2. dF     = change of FGD's expected fragmentation (GPUs) on the GPU the pod would take
    3. -used  = fuller nodes first (keeps empty nodes whole for large pods)

Scores are ``MAX_SCORE - 10 * dense_rank(key)`` (floored at 0): the best key scores 100, the
next 90, ... so that after the wire's rescale to 0..10 the extender's top choice alone gets 10.
Rounding (1 cent, 0.001 GPU) makes near-equal placements ties, broken at random.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.scoring.base import MAX_SCORE, ScoreResult, StrategyContext, register
from extender.core.scoring.capacity import request_fraction, used_fraction
from extender.core.scoring.fgd import FragScorer, first_units
from extender.inventory.snapshot import ClusterSnapshot


def dense_rank(*keys: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Dense rank (0 = best = smallest) of rows compared lexicographically on ``keys``."""
    if len(keys[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    stacked = np.stack(keys, axis=1)
    _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def rank_scores(rank: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    return np.maximum(MAX_SCORE - 10.0 * rank, 0.0)


@register("cost-fragmentation")
class CostFragmentation:
    name = "cost-fragmentation"

    def __init__(self, context: StrategyContext) -> None:
        self.context = context
        self.frag = FragScorer(context)

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        rows, delta, choice, positions = self.frag.delta(snapshot, req, fit)
        units = fit.units[positions]
        cost = self._cost(snapshot, req, rows, units, choice)
        used = used_fraction(snapshot, rows).sum(axis=1)
        rank = dense_rank(np.round(cost * 100.0), np.round(delta, 3), -np.round(used, 3))
        return ScoreResult(rows, rank_scores(rank), choice)

    @staticmethod
    def _cost(snapshot: ClusterSnapshot, req: PlacementRequest, rows: npt.NDArray[np.int64],
              units: npt.NDArray[np.int16], choice: npt.NDArray[np.int16]
              ) -> npt.NDArray[np.float64]:
        """(n,) USD/h of what the pod takes on each node."""
        catalog = snapshot.catalog
        gpu_type = snapshot.gpu_type[rows]
        price = catalog.price[np.where(gpu_type >= 0, gpu_type, catalog.unknown_index)]
        per_gpu = price * request_fraction(snapshot, req, rows)
        taken = first_units(units, req.count)
        has_choice = choice >= 0
        picked = np.zeros_like(taken)
        picked[np.flatnonzero(has_choice), choice[has_choice]] = True
        taken = np.where(has_choice[:, None], picked, taken)
        return np.where(taken, per_gpu, 0.0).sum(axis=1)
