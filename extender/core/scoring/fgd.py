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
from extender.core.frag import MILLI, FragModel, gpu_state, sigmoid
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
        positions, rows = fitting(fit)
        model = self.model()
        state = gpu_state(snapshot, rows)
        cpu = snapshot.cpu_free[rows]
        before = model.node_frag(state, model.levels(cpu))
        level_after = model.levels(cpu - req.cpu_milli)
        units = fit.units[positions]
        if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
            x_after = np.where(state.in_model, share_after(snapshot, req, rows), 0)
            after = model.frag_after_share(state, level_after, x_after)
            after = np.where(units > 0, after, np.inf)
            if integer:
                truncated = np.where(units > 0, np.floor(
                    MAX_SCORE * sigmoid((before[:, None] - after) / MILLI)), -1.0)
                choice = np.argmax(truncated, axis=1).astype(np.int16)
            else:
                choice = np.argmin(after, axis=1).astype(np.int16)
            best = after[np.arange(len(rows)), choice]
            return rows, (best - before) / MILLI, choice, positions
        taken = first_units(units, req.count)
        after = model.frag_after_whole(state, level_after, taken & state.in_model)
        return rows, (after - before) / MILLI, np.full(len(rows), -1, np.int16), positions


def share_after(snapshot: ClusterSnapshot, req: PlacementRequest,
                rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """(n, n_gpus) free thousandths each GPU would keep after hosting a one-GPU share."""
    total = np.maximum(snapshot.total_mib[rows].astype(np.int64), 1)
    free = np.clip(snapshot.free_mib[rows].astype(np.int64), 0, None)
    if req.kind is RequestKind.FRACTION:
        held = total * req.request.milli // 1000
    else:
        held = np.full(total.shape, req.request.vram_mib, dtype=np.int64)
    return np.clip((free - held) * MILLI // total, 0, MILLI)


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

