"""Fragmentation Gradient Descent (Weng et al., USENIX ATC'23), as the authors' simulator
implements it (``fgd_score.go``).

Details: for a sharing pod, every GPU ``j`` of the node that can host it is tried::

    score_j = floor(MAX_SCORE * sigmoid((F_before - F_after_j) / 1000))

the node scores its best GPU, and that GPU is the one used. Whole-GPU pods take the lowest
fully free GPUs and score the node the same way. ``F`` is the node fragmentation against the
typical shapes (``extender.core.fragmentation``). Scores are not normalised; ties are broken at
random.

Weights: ``integer`` (see ``FGD.WEIGHTS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from extender.config.types import Weight
from extender.core.fit import FitResult
from extender.core.fragmentation.scorer import FragScorer, sigmoid
from extender.core.request import PlacementRequest
from extender.core.rowops import group_starts
from extender.core.scoring.base import MAX_SCORE, NodeTerms, ScoreResult, StrategyContext, Term
from extender.core.scoring.helpers import fit_of_rows
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import RequestKind
from extender.units import MILLI


class FGD:
    NAME: ClassVar[str] = "fgd"
    WEIGHTS: ClassVar[Mapping[str, Weight]] = {
        "integer": Weight(1.0, 0.0, 1.0, "1: keep the original's integer truncation of the "
                          "score; 0: float scores (removes ties of |dF| < ~0.04 GPU)",
                          flag=True),
    }
    NEEDS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, context: StrategyContext) -> None:
        self.frag = FragScorer(context.catalog, context.workload)
        self.integer = context.weights(self.WEIGHTS)["integer"] > 0

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        rows, delta, choice = self.delta(snapshot, req, fit)
        scores = MAX_SCORE * sigmoid(-delta)
        if self.integer:
            scores = np.floor(scores)
        return ScoreResult(rows, scores, choice)

    def explain(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult,
                rows: npt.NDArray[np.int64]) -> list[NodeTerms]:
        """``Explainer``: dF with F before and after (GPUs), and the score it ranks by."""
        sub = fit_of_rows(fit, rows)
        rows, delta, _ = self.delta(snapshot, req, sub)
        before = self.frag.model().node_frag_cached(snapshot, rows)[1] / MILLI
        scores = self.score(snapshot, req, sub).scores
        return [(Term("fragmentation", float(d), "GPU", before=float(b), after=float(b + d)),
                 Term("score", float(s), "score", key=-round(s * 1000),
                      decides="least fragmentation (FGD score)"))
                for d, b, s in zip(delta.tolist(), before.tolist(), scores.tolist(),
                                   strict=True)]

    def delta(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult
              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int16]]:
        """For fitting nodes: (rows, dF of the best GPU in GPUs, that GPU's slot or -1).
        dF = F_after - F_before (negative: fragmentation drops).

        With ``integer`` the best GPU is the lowest slot with the best truncated score
        ``floor(MAX_SCORE * sigmoid(-dF))``, as ``calculateGpuShareFragExtendScore`` picks it
        (strict ``>`` over GPUs in index order); otherwise the GPU with the least dF."""
        if req.kind not in (RequestKind.FRACTION, RequestKind.VRAM):
            _, rows, before, after = self.frag.frag_after(snapshot, req, fit)
            return rows, (after - before) / MILLI, np.full(len(rows), -1, np.int16)
        _, rows, before, pos, slot, after = self.frag.share_pairs(snapshot, req, fit,
                                                                  distinct=True)
        n = len(rows)
        choice = np.full(n, -1, dtype=np.int16)
        best = np.zeros(n)
        if len(pos):
            starts = group_starts(pos)
            owners = pos[starts]  # every fitting node has at least one pair
            group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(pos)]))
            smallest = np.minimum.reduceat(after, starts)
            if self.integer:
                pick = first_truncated_best(before.take(owners), smallest, group, after, starts)
            else:
                pick = _first_where(after <= smallest.take(group), starts)
            choice[owners] = slot.take(pick)
            best[owners] = after.take(pick)
        return rows, (best - before) / MILLI, choice


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
