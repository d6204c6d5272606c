"""The default: place a pod where the fewest GPUs (or dollars of GPUs) become unusable, on a
node already in use, in a stable node order.

Details: for each fitting node ``n`` (and, for a one-GPU share, each GPU it fits on)::

    dF   = F_n(after) - F_n(before)        FGD's fragmentation against the typical shapes
    dS   = S_n(after) - S_n(before)        GPUs stranded by memory:
           S_n = max(0, free GPUs of n - free memory of n / m)
           m   = MiB the workload's GPU pods ask per GPU (``WorkloadMix.memory_per_gpu``)
    loss = (dF + dS) x (p_t / p_mean) ^ w  in GPUs (w = 0) or GPU-dollars (w = 1)
    key  = ( ceil(loss / 0.04),            fragmentation first, at FGD's resolution
             0 if n holds a GPU pod else 1, consolidate: do not open a node needlessly
             priority(n) )                 a fixed pseudo-random node order (salted hash)

compared lexicographically; the best key scores ``MAX_SCORE``, the next ``MAX_SCORE - 10``...
(floored at 0), so the extender's top choice alone gets 10 after the wire's rescale. A share
takes the GPU with the smallest ``ceil(dF / 0.04)``, then the least free thousandths.

Why each part (measured on the openb default trace, medians of seeds 42-51, FGD 4.87 %
unallocated at 100 % arrived; see benchmarks/README.md):

- FGD's fragmentation, bucketed at 0.04 GPU (one point of FGD's truncated sigmoid) with
  ``ceil`` (any increase is worse than none, as FGD's ``floor`` makes it). Exact float dF is
  worse (5.8 %): it turns near-ties into decisions and breaks consolidation; so is 0.02 (5.3 %).
- Memory: FGD ignores it, yet 321 of the 361 pods FGD fails at 100 % had a node with the GPU
  and the CPU free but not the memory (G2 nodes hold 48 GiB per GPU, the pods ask 40). ``dS``
  counts the GPUs a placement leaves without the memory their future pods need.
- Consolidation and a fixed order: ties on a fixed node order (a first fit) are what makes FGD
  work at all (10.4 % with random ties). Kube-scheduler breaks ties at random, so the order
  is part of the score here: used nodes first, then a salted hash of the row. Packing by
  fullness instead (best fit) and every type-structured order were worse (5.7-9.4 %).
- Cost: prices enter as the exchange rate of stranded capacity (``weights.costWeight``): with
  w = 1 stranding a T4 (0.53 $/h) weighs half as much as stranding a G2 (1.01 $/h). Steering
  pods to cheap types directly (cheapest type first, or cheapest among empty nodes) cost 1.2
  points of allocation on openb, because it orders nodes by type; see the README.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult, row_any
from extender.core.frag import MILLI
from extender.core.request import PlacementRequest
from extender.core.scoring.base import MAX_SCORE, ScoreResult, StrategyContext, register
from extender.core.scoring.capacity import unit_take, used_total
from extender.core.scoring.fgd import FragScorer
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import RequestKind

RESOLUTION = 0.04
"""GPUs per fragmentation bucket: one point of FGD's ``floor(100 sigmoid(-dF))`` near 0."""
HASH = 2654435761
"""Knuth's multiplicative hash constant: spreads consecutive rows over the order."""


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


def buckets(loss: npt.NDArray[np.float64], resolution: float) -> npt.NDArray[np.int64]:
    """``ceil(loss / resolution)``; a hair of float noise does not cross a bucket."""
    out: npt.NDArray[np.int64] = np.ceil(loss / resolution - 1e-9).astype(np.int64)
    return out


@register("cost-fragmentation")
class CostFragmentation:
    """Weights (``scoring.weights``): ``costWeight`` (w above, default 0), ``fragResolution``
    (GPUs per bucket, default 0.04), ``memoryWeight`` (factor on dS, default 1)."""

    name = "cost-fragmentation"

    def __init__(self, context: StrategyContext) -> None:
        self.context = context
        self.frag = FragScorer(context)
        self.cost_weight = context.weight("costWeight", 0.0)
        self.resolution = context.weight("fragResolution", RESOLUTION)
        self.memory_weight = context.weight("memoryWeight", 1.0)
        self.salt = int(context.rng.integers(1 << 31))
        self.typed_cost = context.weight("typedCost", 1.0) > 0

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
            rows, delta, choice, taken = self._share(snapshot, req, fit)
        else:
            positions, rows, before, after = self.frag.frag_after(snapshot, req, fit)
            delta = (after - before) / MILLI
            choice = np.full(len(rows), -1, dtype=np.int16)
            taken = unit_take(snapshot, req, rows, fit.units[positions]) * req.count
        loss = delta + self.memory_weight * self._stranded(snapshot, req, rows, taken)
        if self.cost_weight:
            loss = loss * self._price_ratio(snapshot, rows, choice) ** self.cost_weight
        idle = (~row_any(snapshot.pods[rows] > 0)).astype(np.int64)
        priority = ((rows + self.salt) * HASH) & 0xFFFFFFFF
        if self.typed_cost and self._names_alternatives(snapshot, req):
            cents = np.round(self._price_ratio(snapshot, rows, choice) * 1000).astype(np.int64)
            rank = dense_rank(buckets(loss, self.resolution), idle, cents, priority)
        else:
            rank = dense_rank(buckets(loss, self.resolution), idle, priority)
        return ScoreResult(rows, rank_scores(rank), choice)

    def _share(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult
               ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64],
                          npt.NDArray[np.int16], npt.NDArray[np.float64]]:
        """A one-GPU share: (rows, dF of each node's GPU, that GPU, GPU-equivalents taken).
        The GPU: the smallest dF bucket, then the least free thousandths, then the lowest
        slot."""
        _, rows, before, pos, slot, after = self.frag.share_pairs(snapshot, req, fit)
        n = len(rows)
        choice = np.full(n, -1, dtype=np.int16)
        delta = np.zeros(n)
        taken = np.zeros(n)
        if len(pos) == 0:
            return rows, delta, choice, taken
        at = rows.take(pos)
        total = np.maximum(snapshot.total_mib[at, slot].astype(np.int64), 1)
        free = np.clip(snapshot.free_mib[at, slot].astype(np.int64), 0, None) * MILLI // total
        key = buckets((after - before.take(pos)) / MILLI, self.resolution) * (MILLI + 1) + \
            np.minimum(free, MILLI)
        order = np.lexsort((key, pos))  # by node, then key; pairs of a node are contiguous
        first = order[np.flatnonzero(np.r_[True, np.diff(pos[order]) != 0])]
        owners = pos[first]
        choice[owners] = slot[first]
        delta[owners] = (after[first] - before[owners]) / MILLI
        taken[owners] = req.request.milli / MILLI if req.kind is RequestKind.FRACTION else \
            req.request.vram_mib / total[first]
        return rows, delta, choice, taken

    def _stranded(self, snapshot: ClusterSnapshot, req: PlacementRequest,
                  rows: npt.NDArray[np.int64], taken: npt.NDArray[np.float64]
                  ) -> npt.NDArray[np.float64]:
        """(n,) dS: GPUs the placement leaves without the memory their pods would need."""
        per_gpu = self.context.workload.memory_per_gpu()
        if not per_gpu or self.memory_weight == 0:
            return np.zeros(len(rows))
        held, count = used_total(snapshot, rows)
        free = count - held
        memory = snapshot.memory_free[rows].astype(np.float64)
        before = np.maximum(0.0, free - memory / per_gpu)
        after = np.maximum(0.0, free - taken - (memory - req.memory_mib) / per_gpu)
        out: npt.NDArray[np.float64] = after - before
        return out

    @staticmethod
    def _names_alternatives(snapshot: ClusterSnapshot, req: PlacementRequest) -> bool:
        """The pod named GPU types itself, and they differ in price."""
        types = req.request.types
        if not types or len(types) < 2:
            return False
        prices = {float(snapshot.catalog.price[t]) for t in types}
        return len(prices) > 1

    @staticmethod
    def _price_ratio(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64],
                     choice: npt.NDArray[np.int16]) -> npt.NDArray[np.float64]:
        """(n,) price of the GPU type the pod takes on each node (its chosen GPU, else the
        node's first) over the mean price of the cluster's GPUs."""
        catalog = snapshot.catalog
        gpu_type = snapshot.gpu_type
        present = gpu_type >= 0
        mean = float(catalog.price[gpu_type[present]].mean()) if present.any() else 1.0
        types = gpu_type[rows, np.maximum(choice, 0)]
        price = catalog.price[np.where(types >= 0, types, catalog.unknown_index)]
        out: npt.NDArray[np.float64] = price / max(mean, 1e-9)
        return out
