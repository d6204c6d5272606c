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

from extender.core.fit import FitResult
from extender.core.frag import MILLI, gpu_state
from extender.core.request import PlacementRequest
from extender.core.scoring.base import MAX_SCORE, ScoreResult, StrategyContext, register
from extender.core.scoring.capacity import request_fraction, used_fraction
from extender.core.scoring.fgd import FragScorer, first_units
from extender.inventory.snapshot import ClusterSnapshot

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

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        positions, rows, before, after = self.frag.frag_after(snapshot, req, fit)
        n = len(rows)
        units = fit.units[positions]
        share = request_fraction(snapshot, req, rows)
        if after.ndim == 2:  # a one-GPU share: the GPU first
            fits = units > 0
            finite = np.where(fits, after, before[:, None])  # inf where the share cannot go
            bucket = np.where(fits, buckets((finite - before[:, None]) / MILLI,
                                            self.resolution), np.iinfo(np.int64).max // 4)
            free = gpu_state(snapshot, rows).x
            choice = np.argmin(bucket * (MILLI + 1) + free, axis=1).astype(np.int16)
            index = np.arange(n)
            delta = (after[index, choice] - before) / MILLI
            taken = np.zeros(units.shape, dtype=bool)
            taken[index, choice] = True
        else:
            delta = (after - before) / MILLI
            choice = np.full(n, -1, dtype=np.int16)
            taken = first_units(units, req.count)
        loss = delta + self.memory_weight * self._stranded(snapshot, req, rows, share, taken)
        if self.cost_weight:
            loss = loss * self._price_ratio(snapshot, rows, taken) ** self.cost_weight
        idle = (snapshot.pods[rows] == 0).all(axis=1).astype(np.int64)
        priority = ((rows + self.salt) * HASH) & 0xFFFFFFFF
        rank = dense_rank(buckets(loss, self.resolution), idle, priority)
        return ScoreResult(rows, rank_scores(rank), choice)

    def _stranded(self, snapshot: ClusterSnapshot, req: PlacementRequest,
                  rows: npt.NDArray[np.int64], share: npt.NDArray[np.float64],
                  taken: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        """(n,) dS: GPUs the placement leaves without the memory their pods would need."""
        per_gpu = self.context.workload.memory_per_gpu()
        if not per_gpu or self.memory_weight == 0:
            return np.zeros(len(rows))
        free = (1.0 - used_fraction(snapshot, rows)).sum(axis=1)
        memory = snapshot.memory_free[rows].astype(np.float64)
        before = np.maximum(0.0, free - memory / per_gpu)
        after = np.maximum(0.0, free - np.where(taken, share, 0.0).sum(axis=1)
                           - (memory - req.memory_mib) / per_gpu)
        out: npt.NDArray[np.float64] = after - before
        return out

    @staticmethod
    def _price_ratio(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64],
                     taken: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        """(n,) price of the node's GPU type (the one the pod takes) over the mean price of
        the cluster's GPUs."""
        catalog = snapshot.catalog
        gpu_type = snapshot.gpu_type
        present = gpu_type >= 0
        mean = float(catalog.price[gpu_type[present]].mean()) if present.any() else 1.0
        types = gpu_type[rows]
        own = np.where(taken, types, -1).max(axis=1)
        own = np.where(own >= 0, own, types.max(axis=1))
        price = catalog.price[np.where(own >= 0, own, catalog.unknown_index)]
        out: npt.NDArray[np.float64] = price / max(mean, 1e-9)
        return out
