"""BestFit as the FGD simulator implements it (``best_fit_score.go``).

Details: with CPU max 128 cores and GPU max 8 GPUs (as thousandths)::

    s = 0.5 * (cpu_free - cpu_req) / 128000 + 0.5 * (gpu_free - gpu_req) / 8000
    score = MAX_SCORE * (1 - s), then min-max normalised over the candidates

so the node left with the least free capacity along both axes wins.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.scoring.base import MAX_SCORE, ScoreResult, StatelessStrategy
from extender.core.scoring.capacity import unit_take, used_total
from extender.core.scoring.helpers import fitting, min_max, no_choice
from extender.inventory.snapshot import ClusterSnapshot
from extender.units import MAX_CPU_MILLI, MAX_GPU_MILLI


class BestFit(StatelessStrategy):
    NAME: ClassVar[str] = "best-fit"

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        positions, rows = fitting(fit)
        used, count = used_total(snapshot, rows)
        gpu_free = (count - used) * 1000  # sum over GPUs of (1 - used)
        gpu_req = unit_take(snapshot, req, rows, fit.units[positions]) * req.count * 1000
        cpu_free = snapshot.cpu_free[rows].astype(np.float64)
        s = 0.5 * (cpu_free - req.cpu_milli) / MAX_CPU_MILLI + \
            0.5 * (gpu_free - gpu_req) / MAX_GPU_MILLI
        return ScoreResult(rows, min_max(MAX_SCORE * (1.0 - s)), no_choice(len(rows)))
