"""Small pieces several strategies share (not part of the protocol)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.scoring.base import MAX_SCORE


def fitting(fit: FitResult) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Positions (into ``fit.rows``) and snapshot rows of the nodes that fit."""
    positions = np.flatnonzero(fit.fits)
    return positions, fit.rows[positions]


def no_choice(n: int) -> npt.NDArray[np.int16]:
    return np.full(n, -1, dtype=np.int16)


def min_max(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """kube's NormalizeScore: rescale to [0, MAX_SCORE]; all equal -> all MAX_SCORE."""
    if len(scores) == 0:
        return scores
    low, high = float(scores.min()), float(scores.max())
    if high - low < 1e-12:
        return np.full_like(scores, MAX_SCORE)
    out: npt.NDArray[np.float64] = np.clip((scores - low) * MAX_SCORE / (high - low), 0.0,
                                           MAX_SCORE)
    return out  # clipped: (high - low) * 100 / (high - low) may round to 100.00000000000001
