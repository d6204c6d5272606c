"""EXPERIMENTAL version (being tuned)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.frag import MILLI, gpu_state
from extender.core.request import PlacementRequest
from extender.core.scoring.base import MAX_SCORE, ScoreResult, StrategyContext, register
from extender.core.scoring.capacity import request_fraction, used_fraction
from extender.core.scoring.fgd import FragScorer, first_units
from extender.inventory.snapshot import ClusterSnapshot


def dense_rank(*keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Dense rank (0 = best = smallest) of rows compared lexicographically on ``keys``."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys[::-1])
    changed = np.zeros(n, dtype=bool)
    for key in keys:
        ordered = key[order]
        changed[1:] |= ordered[1:] != ordered[:-1]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.cumsum(changed)
    return rank


def rank_scores(rank: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    return np.maximum(MAX_SCORE - 10.0 * rank, 0.0)


@register("cost-fragmentation")
class CostFragmentation:
    name = "cost-fragmentation"

    def __init__(self, context: StrategyContext) -> None:
        self.context = context
        self.frag = FragScorer(context)
        self.mode = int(context.weight("mode", 1))
        self.resolution = context.weight("resolution", 0.001)

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        cov = self.context.weight("coverage", 0.95)
        if cov != 0.95 and getattr(self, "_cov_done", None) is None:
            self.frag.set_shapes(self.context.workload.typical(cov))
            self._cov_done = True
        positions, rows, before, after = self.frag.frag_after(snapshot, req, fit)
        units = fit.units[positions]
        state = gpu_state(snapshot, rows)
        x = state.x
        n = len(rows)
        if after.ndim == 2:
            d = (after - before[:, None]) / MILLI
            q = np.where(units > 0, np.ceil(d / self.resolution - 1e-9)
                         if self.context.weight("ceil", 0) > 0 else np.round(d / self.resolution),
                         np.inf)
            key = np.where(units > 0, q * (MILLI + 1) + x, np.inf)
            choice = np.argmin(key, axis=1).astype(np.int16)
            idx = np.arange(n)
            delta = d[idx, choice]
            taken = np.zeros(units.shape, dtype=bool)
            taken[idx, choice] = True
        else:
            delta = (after - before) / MILLI
            choice = np.full(n, -1, dtype=np.int16)
            taken = first_units(units, req.count)
        catalog = snapshot.catalog
        gpu_type = snapshot.gpu_type[rows]
        price = catalog.price[np.where(gpu_type >= 0, gpu_type, catalog.unknown_index)]
        share = request_fraction(snapshot, req, rows)
        cost = np.where(taken, price * share, 0.0).sum(axis=1)
        node_price = np.where(taken, price, 0.0).max(axis=1)
        free_after = (1.0 - used_fraction(snapshot, rows)).sum(axis=1) - \
            np.where(taken, share, 0.0).sum(axis=1)
        pack = np.round(free_after * MILLI).astype(np.int64)
        strand_w = self.context.weight("strand", 0.0)
        if strand_w > 0:
            model = self.frag.model()
            gshapes = [(sh, w) for sh, w in model.shapes.items() if sh.gpus > 0]
            cpu_per_gpu = sum(w * sh.cpu_milli for sh, w in gshapes) / max(
                1e-9, sum(w * sh.gpus * sh.milli / MILLI for sh, w in gshapes))
            free_before = (1.0 - used_fraction(snapshot, rows)).sum(axis=1)
            cpu = snapshot.cpu_free[rows].astype(np.float64)
            s_before = np.maximum(0.0, free_before - cpu / cpu_per_gpu)
            s_after = np.maximum(0.0, free_after - (cpu - req.cpu_milli) / cpu_per_gpu)
            delta = delta + strand_w * (s_after - s_before)
        if self.context.weight("ceil", 0) > 0:
            qd = np.ceil(delta / self.resolution - 1e-9).astype(np.int64)
        else:
            qd = np.round(delta / self.resolution).astype(np.int64)
        used_node = (used_fraction(snapshot, rows).sum(axis=1) > 1e-9).astype(np.int64)
        rel = np.round(used_fraction(snapshot, rows).mean(axis=1) * 1000).astype(np.int64)
        cents = np.round(cost * 100).astype(np.int64)
        if self.mode == 1:
            rank = dense_rank(qd, pack)
        elif self.mode == 2:
            rank = dense_rank(qd, cents, pack)
        elif self.mode == 3:
            j = np.round(node_price * (np.where(taken, share, 0.0).sum(axis=1) + delta)
                         / self.resolution).astype(np.int64)
            rank = dense_rank(j, pack)
        elif self.mode == 4:
            rank = dense_rank(cents, qd, pack)
        elif self.mode == 5:
            rank = dense_rank(qd, cents)
        elif self.mode == 6:
            rank = dense_rank(qd, -used_node)
        elif self.mode == 9:
            rank = dense_rank(qd, -used_node, cents)
        elif self.mode == 10:
            rank = dense_rank(qd, cents, -used_node)
        elif self.mode in (13, 14):
            free_gpu = np.maximum(free_after, 0.5)
            dens = np.floor((snapshot.cpu_free[rows] - req.cpu_milli) / 1000.0 / free_gpu
                            / self.context.weight("bucket", 4.0)).astype(np.int64)
            rank = dense_rank(qd, -used_node, dens) if self.mode == 13 else \
                dense_rank(qd, dens, -used_node)
        elif self.mode == 15:
            rank = dense_rank(qd, -used_node, np.where(used_node > 0, 0, cents))
        elif self.mode == 16:
            rank = dense_rank(qd, -used_node, np.where(used_node > 0, 0, -cents))
        elif self.mode == 17:
            unit_price = np.where(taken, price, np.inf).min(axis=1)
            cheapest = unit_price.min() if len(unit_price) else 0.0
            dear = (unit_price > self.context.weight("ratio", 2.0) * cheapest).astype(np.int64)
            rank = dense_rank(qd, dear, -used_node)
        elif self.mode == 18:
            partial = ((x > 0) & (x < MILLI)).any(axis=1).astype(np.int64)
            rank = dense_rank(qd, -used_node, partial)
        elif self.mode == 19:
            from extender.core.frag import sigmoid
            sig = -np.floor(MAX_SCORE * sigmoid(-delta)).astype(np.int64)
            rank = dense_rank(sig, -used_node)
        elif self.mode == 7:
            rank = dense_rank(qd, -rel)
        else:
            rank = dense_rank(qd)
        return ScoreResult(rows, rank_scores(rank), choice)
