"""Reductions over the GPU axis of ``(n_rows, n_gpus)`` arrays, the runs of a sorted owner
column and the positions of a mask: the row operations the kernels (``fit``, the
fragmentation model, the strategies) and the verbs use instead of numpy's slow reductions over
a short last axis and its Python-level ``flatnonzero``. Equal to numpy's on every width and
shape (``tests/core/test_rowops.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

# -- row reductions ---------------------------------------------------------------------------
#
# numpy reduces a short last axis (8 GPU slots) slowly: ``mask.any(axis=1)`` on (10000, 8) costs
# ~130 us. Viewing 8 bools (or 8 small counts) as one uint64 word makes it one vector op.

_BYTE_SUM = np.uint64(0x0101010101010101)
_SHIFT = np.uint64(56)


def _words(values: npt.NDArray[np.bool_] | npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64] | None:
    """(n, g/8) uint64 view of a C-contiguous (n, g) one-byte array, or None if impossible."""
    if values.ndim != 2 or values.shape[1] % 8 or not values.flags.c_contiguous or \
            values.shape[0] == 0:
        return None
    return values.view(np.uint64)


def row_any(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """(n,) any over the GPU axis of an (n, g) bool array."""
    words = _words(mask)
    if words is None:
        out: npt.NDArray[np.bool_] = np.asarray(mask.any(axis=1))
        return out
    if words.shape[1] == 1:
        return words[:, 0] != 0
    return np.bitwise_or.reduce(words, axis=1) != 0


def row_count(values: npt.NDArray[np.bool_] | npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """(n,) sum over the GPU axis of an (n, g) bool or uint8 array whose sums per 8 slots
    stay below 256 (counts of GPUs, MIG placements)."""
    words = _words(values)
    if words is None:
        return values.sum(axis=1, dtype=np.int64)
    sums = (words * _BYTE_SUM) >> _SHIFT
    if sums.shape[1] == 1:
        return sums[:, 0].astype(np.int64)
    return sums.sum(axis=1).astype(np.int64)


def _reduce_rows(values: npt.NDArray[Any], ufunc: np.ufunc) -> npt.NDArray[Any]:
    """(n,) ``ufunc`` (minimum/maximum) over the GPU axis: on a transposed contiguous copy the
    reduction runs along long rows (~10x faster than over the short last axis)."""
    if values.ndim != 2 or values.shape[0] == 0 or values.shape[1] == 0:
        return ufunc.reduce(values, axis=-1)
    return ufunc.reduce(np.ascontiguousarray(values.T), axis=0)


def row_min(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return _reduce_rows(values, np.minimum)


def row_max(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return _reduce_rows(values, np.maximum)


def row_sum(values: npt.NDArray[np.floating[Any]] | npt.NDArray[np.integer[Any]]
            ) -> npt.NDArray[np.float64]:
    """(n,) float sum over the GPU axis (a matrix-vector product: fast for short rows)."""
    if values.ndim != 2 or values.shape[0] == 0:
        return np.asarray(values, dtype=np.float64).sum(axis=-1)
    floats = np.ascontiguousarray(values, dtype=np.float64)
    out: npt.NDArray[np.float64] = floats @ np.ones(values.shape[1])
    return out


def row_sum_in_order(values: npt.NDArray[np.floating[Any]] | npt.NDArray[np.integer[Any]]
                     ) -> npt.NDArray[np.float64]:
    """Float sum over the last axis of any-shaped ``values``, added left to right.

    Unlike ``row_sum`` (BLAS, whose order of additions depends on how many rows it is given),
    every row's result has the same bits however many rows are summed at once, in whatever
    array: the bulk fill of a ``RowCache`` and the refresh of one row agree exactly, and so
    do two nodes in the same state. One vector add per column (the last axis is short)."""
    if values.shape[-1] == 0:
        return np.zeros(values.shape[:-1])
    out = values[..., 0].astype(np.float64)
    for column in range(1, values.shape[-1]):
        out += values[..., column]
    return out


def group_starts(owner: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """Where each run of equal values begins in a sorted, non-empty ``owner`` (the groups of
    ``np.*.reduceat``)."""
    return flat_nonzero(np.r_[True, owner[1:] != owner[:-1]])


def flat_nonzero(mask: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """``np.flatnonzero(mask)`` for an array, without its Python wrappers: the ndarray
    methods are C, the module function goes through three Python calls (1.6 against 0.3 us
    on a one-row mask; the hot paths call it a few dozen times per pod)."""
    out: npt.NDArray[np.intp] = mask.ravel().nonzero()[0]
    return out
