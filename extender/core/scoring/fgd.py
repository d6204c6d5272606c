"""Fragmentation Gradient Descent (Weng et al., USENIX ATC'23), as the authors' simulator
implements it (``fgd_score.go``).

Details: for a sharing pod, every GPU ``j`` of the node that can host it is tried::

    score_j = floor(MAX_SCORE * sigmoid((F_before - F_after_j) / 1000))

the node scores its best GPU, and that GPU is the one used. Whole-GPU pods take the lowest
fully free GPUs and score the node the same way. ``F`` is the node fragmentation against the
typical shapes (``extender.core.frag``). Scores are not normalised; ties are broken at random.

``weights.integer`` (default 1): keep the integer truncation of the original (set 0 for float
scores, which removes ties of |dF| < ~0.04 GPU).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.frag import FragModel, sigmoid
from extender.core.request import PlacementRequest
from extender.core.scoring.base import (
    MAX_SCORE,
    ScoreResult,
    StrategyContext,
    fitting,
    register,
)
from extender.core.workload import Shape
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import RequestKind
from extender.units import MILLI


class FragScorer:
    """Keeps a ``FragModel`` in step with the workload mix and computes dF per node/GPU."""

    def __init__(self, context: StrategyContext) -> None:
        self.context = context
        self._model: FragModel | None = None
        self._version = -1

    def model(self) -> FragModel:
        workload = self.context.workload
        if self._model is None or self._version != workload.version:
            self._version = workload.version
            self._model = FragModel(self.context.catalog, workload.typical())
        return self._model

    def set_shapes(self, shapes: dict[Shape, float]) -> None:
        """Fix the typical shapes (the simulator takes them from the trace)."""
        self._model = FragModel(self.context.catalog, shapes)
        self._version = self.context.workload.version

    def delta(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult, *,
              integer: bool = False
              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int16],
                         npt.NDArray[np.int64]]:
        """For fitting nodes: (rows, dF of the best GPU in GPUs, that GPU's slot or -1,
        positions). dF = F_after - F_before (negative: fragmentation drops).

        ``integer``: the best GPU is the lowest slot with the best truncated score
        ``floor(MAX_SCORE * sigmoid(-dF))``, as ``calculateGpuShareFragExtendScore`` picks it
        (strict ``>`` over GPUs in index order); otherwise the GPU with the least dF."""
        if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
            positions, rows, before, pos, slot, after = self.share_pairs(snapshot, req, fit,
                                                                         distinct=True)
            n = len(rows)
            choice = np.full(n, -1, dtype=np.int16)
            best = np.zeros(n)
            if len(pos):
                starts = np.flatnonzero(np.r_[True, pos[1:] != pos[:-1]])
                owners = pos[starts]  # every fitting node has at least one pair
                group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(pos)]))
                smallest = np.minimum.reduceat(after, starts)
                if integer:
                    pick = first_truncated_best(before.take(owners), smallest, group, after,
                                                starts)
                else:
                    pick = _first_where(after <= smallest.take(group), starts)
                choice[owners] = slot.take(pick)
                best[owners] = after.take(pick)
            return rows, (best - before) / MILLI, choice, positions
        positions, rows, before, after = self.frag_after(snapshot, req, fit)
        return rows, (after - before) / MILLI, np.full(len(rows), -1, np.int16), positions

    def share_pairs(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult,
                    *, distinct: bool = False
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                               npt.NDArray[np.float64], npt.NDArray[np.intp],
                               npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """A one-GPU share on fitting nodes, per candidate GPU: (positions, rows, F before
        (n,), pair node (m,) as an index into rows, pair slot (m,), F after (m,)); pairs
        sorted by node then slot. ``distinct``: leave out GPUs in the same state as a lower
        slot of their node (same F after; for callers that want each node's best GPU, lowest
        slot first)."""
        positions, rows = fitting(fit)
        model = self.model()
        level, before = model.node_frag_cached(snapshot, rows)
        level_after = level if req.cpu_milli == 0 else \
            model.levels(snapshot.cpu_free[rows] - req.cpu_milli)
        pos, slot = unit_pairs(fit, positions)
        if distinct:
            keep = first_of_kind(snapshot, rows.take(pos), slot)
            if not keep.all():
                pos, slot = pos[keep], slot[keep]
        x_after = share_after_at(snapshot, req, rows.take(pos), slot)
        after = model.frag_after_changes(snapshot, rows, level_after, owner=pos, slot=slot,
                                         x_after=x_after)
        return positions, rows, before, pos, slot, after

    def frag_after(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                              npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """For fitting nodes: (positions, rows, F before (n,), F after) in thousandths.

        F after is ``(n, n_gpus)`` for a one-GPU share (placed on GPU j; ``inf`` where it does
        not fit) and ``(n,)`` otherwise (whole GPUs: the lowest fully free ones)."""
        if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
            positions, rows, before, pos, slot, pairs = self.share_pairs(snapshot, req, fit)
            after = np.full((len(rows), snapshot.n_gpus), np.inf)
            after[pos, slot] = pairs
            return positions, rows, before, after
        positions, rows = fitting(fit)
        model = self.model()
        level, before = model.node_frag_cached(snapshot, rows)
        level_after = level if req.cpu_milli == 0 else \
            model.levels(snapshot.cpu_free[rows] - req.cpu_milli)
        # the lowest ``count`` GPUs with a unit are taken whole (x -> 0)
        pos, slot = unit_pairs(fit, positions)
        if len(pos):
            starts = np.flatnonzero(np.r_[True, pos[1:] != pos[:-1]])
            rank = np.arange(len(pos)) - np.repeat(starts, np.diff(np.r_[starts, len(pos)]))
            keep = rank < req.count
            pos, slot = pos[keep], slot[keep]
        after = model.frag_after_changes(snapshot, rows, level_after, owner=pos, slot=slot,
                                         x_after=np.zeros(len(pos), dtype=np.int64),
                                         sets=len(rows))
        return positions, rows, before, after


def share_after(snapshot: ClusterSnapshot, req: PlacementRequest,
                rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """(n, n_gpus) free thousandths each GPU would keep after hosting a one-GPU share."""
    total = np.maximum(snapshot.total_mib[rows], 1)
    free = np.maximum(snapshot.free_mib[rows], 0)
    held: npt.NDArray[np.int64] | int = total.astype(np.int64) * req.request.milli // 1000 \
        if req.kind is RequestKind.FRACTION else req.request.vram_mib
    left = np.maximum(free - held, 0)
    # floor(left * 1000 / total) in float64 is exact here (operands < 2**53)
    return np.minimum(np.floor(left * float(MILLI) / total), MILLI).astype(np.int64)


def unit_pairs(fit: FitResult, positions: npt.NDArray[np.int64]
               ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """(node, slot) of every GPU with a unit on the fitting nodes, sorted by node then slot;
    ``node`` indexes ``positions``."""
    units = fit.units
    width = units.shape[1]
    flat = np.flatnonzero(units > 0)
    row = flat // width
    slot = flat - row * width
    index = np.full(len(units), -1, dtype=np.intp)
    index[positions] = np.arange(len(positions))
    node = index.take(row)
    keep = node >= 0
    if not keep.all():
        node, slot = node[keep], slot[keep]
    return node.astype(np.intp), slot.astype(np.intp)


_SIGNATURE = ("gpu_type", "total_mib", "free_mib", "replicas", "replicas_free",
              "replicas_shared", "mig_layout", "mig_used", "healthy")
"""Per-GPU state that decides whether and how a one-GPU share fits (not which pods)."""


def _first_of_kind_rows(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                        ) -> tuple[npt.NDArray[np.bool_]]:
    """(n, n_gpus) True for a GPU unless an earlier GPU of its node is in the same state."""
    columns = [getattr(snapshot, name)[rows] for name in _SIGNATURE]
    width = snapshot.n_gpus
    first = np.ones((len(rows), width), dtype=bool)
    for g in range(1, width):
        for h in range(g):
            same = np.ones(len(rows), dtype=bool)
            for column in columns:
                same &= column[:, g] == column[:, h]
            first[:, g] &= ~same
    return (first,)


def first_of_kind(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64],
                  slots: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(m,) for GPU ``slots[k]`` of row ``rows[k]``: no lower slot of that node is in the same
    state (through the snapshot's row cache: only rows that changed are recomputed)."""
    flat = rows * snapshot.n_gpus + slots
    first: npt.NDArray[np.bool_] = snapshot.cache.use(
        ("first-of-kind",), snapshot, _first_of_kind_rows,
        lambda arrays: arrays[0].reshape(-1).take(flat))
    return first


def share_after_at(snapshot: ClusterSnapshot, req: PlacementRequest,
                   rows: npt.NDArray[np.int64], slots: npt.NDArray[np.intp]
                   ) -> npt.NDArray[np.int64]:
    """(m,) ``share_after`` of GPU ``slots[k]`` of snapshot row ``rows[k]``."""
    flat = rows * snapshot.n_gpus + slots
    total = np.maximum(snapshot.total_mib.reshape(-1).take(flat), 1)
    free = np.maximum(snapshot.free_mib.reshape(-1).take(flat), 0)
    held: npt.NDArray[np.int64] | int = total.astype(np.int64) * req.request.milli // 1000 \
        if req.kind is RequestKind.FRACTION else req.request.vram_mib
    left = np.maximum(free - held, 0)
    return np.minimum(np.floor(left * float(MILLI) / total), MILLI).astype(np.int64)


def _first_where(mask: npt.NDArray[np.bool_], starts: npt.NDArray[np.intp]
                 ) -> npt.NDArray[np.intp]:
    """Per group of pairs (groups begin at ``starts``) the first pair where ``mask`` holds,
    or the group's first pair if none does."""
    m = len(mask)
    first = np.minimum.reduceat(np.where(mask, np.arange(m), m), starts)
    return np.where(first < m, first, starts).astype(np.intp)


def first_truncated_best(before: npt.NDArray[np.float64], smallest: npt.NDArray[np.float64],
                         group: npt.NDArray[np.intp], after: npt.NDArray[np.float64],
                         starts: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """Per node the first pair (lowest slot) whose truncated score ``floor(MAX_SCORE *
    sigmoid((before - after) / MILLI))`` is the node's best: the simulator's loop over GPUs
    with a strict ``>``. ``before`` and ``smallest`` (the least F after) are per node,
    ``group`` is each pair's node.

    The score falls as F after grows, so the best integer comes from the smallest F after
    and the GPUs that reach it are those below a threshold: no sigmoid per GPU. Nodes where
    float rounding could blur the threshold are redone exactly."""
    best = np.floor(MAX_SCORE * sigmoid((before - smallest) / MILLI))
    p = best / MAX_SCORE
    with np.errstate(divide="ignore"):
        logit = np.log(p) - np.log1p(-p)  # -inf at p = 0: every GPU reaches score 0
    threshold = before - MILLI * logit
    pair_threshold = threshold.take(group)
    pick = _first_where(after <= pair_threshold, starts)
    exact = np.floor(MAX_SCORE * sigmoid((before - after.take(pick)) / MILLI))
    # at score 50 the threshold is exact: logit(0.5) = 0 and sigmoid(0) = 0.5
    tolerance = 1e-6 * np.maximum(1.0, np.abs(threshold))
    near = np.abs(after - pair_threshold) < tolerance.take(group)
    near_group = np.logical_or.reduceat(near, starts)
    doubtful = np.flatnonzero((exact != best) | (near_group & (best != MAX_SCORE / 2)))
    for g in doubtful:
        lo = int(starts[g])
        hi = int(starts[g + 1]) if g + 1 < len(starts) else len(after)
        scores = np.floor(MAX_SCORE * sigmoid((before[g] - after[lo:hi]) / MILLI))
        pick[g] = lo + int(np.argmax(scores))
    return pick


def first_units(units: npt.NDArray[np.int16], count: int) -> npt.NDArray[np.bool_]:
    """(n, n_gpus) the first ``count`` GPUs with a unit on each row (lowest slots)."""
    has = units > 0
    return has & (np.cumsum(has, axis=1) <= count)


@register("fgd")
class FGD:
    name = "fgd"

    def __init__(self, context: StrategyContext) -> None:
        self.frag = FragScorer(context)
        self.integer = context.weight("integer", 1.0) > 0

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        rows, delta, choice, _ = self.frag.delta(snapshot, req, fit, integer=self.integer)
        scores = MAX_SCORE * sigmoid(-delta)
        if self.integer:
            scores = np.floor(scores)
        return ScoreResult(rows, scores, choice)

