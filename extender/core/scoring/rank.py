"""Ranking of rows on lexicographic keys, as the default strategy scores them: the best key
scores ``MAX_SCORE``, the next ``MAX_SCORE - 10``... (floored at 0), and the float buckets its
keys are made of (``tests/core/test_rank.py``)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.rowops import flat_nonzero
from extender.core.scoring.base import MAX_SCORE


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


TOP = int(MAX_SCORE // 10)
"""Ranks that score above 0: ``rank_scores`` gives 0 from rank 10 on."""


def top_rank_scores(*keys: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """``rank_scores(dense_rank(*keys))`` without sorting every row: only the ``TOP`` best
    distinct keys score above 0, so the keys are packed into one int64 (when their ranges
    fit in 63 bits) and only the smallest few are sorted: O(n) instead of O(n log n).
    Packed in place, and the few distinct values found by one sort of the smallest (the
    default strategy ranks every fitting node of every burst pod: each NumPy call here is
    about a microsecond of fixed cost)."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0)
    packed = np.zeros(n, dtype=np.int64)
    width = 0
    for key in keys:
        low = int(key.min())
        bits = max(1, (int(key.max()) - low).bit_length())
        width += bits
        if width > 63:
            return rank_scores(dense_rank(*keys))
        packed <<= bits
        packed |= key - low
    take = min(n, 8 * TOP)
    smallest = np.partition(packed, take - 1)[:take] if take < n else packed.copy()
    smallest.sort()
    distinct = np.empty(take, dtype=bool)
    distinct[0] = True
    np.not_equal(smallest[1:], smallest[:-1], out=distinct[1:])
    cut = smallest[distinct]
    if len(cut) < TOP and take < n:
        return rank_scores(dense_rank(*keys))  # heavy ties: rank them all
    cut = cut[:TOP]
    scores = np.zeros(n)
    chosen = flat_nonzero(packed <= cut[-1])
    scores[chosen] = MAX_SCORE - 10.0 * cut.searchsorted(packed[chosen])
    return scores


def buckets(loss: npt.NDArray[np.float64], resolution: float) -> npt.NDArray[np.int64]:
    """``ceil(loss / resolution)``; a hair of float noise does not cross a bucket."""
    out: npt.NDArray[np.int64] = np.ceil(loss / resolution - 1e-9).astype(np.int64)
    return out
