"""Small pieces several strategies share (not part of the protocol)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.rowops import flat_nonzero
from extender.core.scoring.base import MAX_SCORE


def fitting(fit: FitResult) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Positions (into ``fit.rows``) and snapshot rows of the nodes that fit."""
    positions = flat_nonzero(fit.fits)
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


def fit_of_rows(fit: FitResult, rows: npt.NDArray[np.int64]) -> FitResult:
    """The part of ``fit`` about snapshot ``rows`` (in that order; each must be in
    ``fit.rows``): an explanation scores a few rows, not the whole call."""
    # a few rows: one comparison over the fit's rows each (a dict of every row cost more
    # than the explanation's arithmetic: py-spy, issue 22)
    found = [flat_nonzero(fit.rows == r) for r in rows.tolist()]
    for row, hits in zip(rows.tolist(), found, strict=True):
        if len(hits) == 0:
            raise ValueError(f"row {row} is not one of the fit's rows")
    positions = np.array([int(hits[0]) for hits in found], dtype=np.int64)
    return FitResult(rows=fit.rows[positions], code=fit.code[positions],
                     params=fit.params[positions], units=fit.units[positions])
