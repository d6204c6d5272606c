"""How much of each GPU is in use and how much a request would take, in GPU-equivalents.

Shared by the allocation-style scorers. Shapes ``(n, n_gpus)`` float64.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import mig_starts
from extender.core.request import PlacementRequest
from extender.core.rowops import row_any, row_count, row_max, row_min, row_sum_in_order
from extender.inventory.layout import POPCOUNT
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import RequestKind


def _used_rows(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                          npt.NDArray[np.int64]]:
    """(used fraction per GPU, its sum per node, GPUs per node) of snapshot ``rows``.

    The sum adds each node's GPUs left to right (``row_sum_in_order``), so a node's total
    has the same bits whether the row was refreshed alone (``_used_row``, a placement's) or
    with the cluster: two nodes in the same state get the same dS and dP."""
    if len(rows) == 1:
        return _used_row(snapshot, int(rows[0]))
    gpu_type = snapshot.gpu_type[rows]
    present = gpu_type >= 0
    total = np.maximum(snapshot.total_mib[rows], 1).astype(np.float64)
    vram = 1.0 - np.maximum(snapshot.free_mib[rows], 0) / total
    replicas = snapshot.replicas[rows].astype(np.float64)
    sliced = 1.0 - snapshot.replicas_free[rows] / np.maximum(replicas, 1.0)
    catalog = snapshot.catalog
    mig_slots = catalog.mig_slots.take(gpu_type)  # padding reads the unknown type: 0 slots
    slots = np.maximum(mig_slots, 1).astype(np.float64)
    mig = (POPCOUNT.take(snapshot.mig_used[rows]) - (8 - mig_slots)) / slots
    layout = snapshot.mig_layout[rows]
    used = np.where(layout >= 0, mig, np.where(replicas > 0, np.maximum(sliced, vram), vram))
    used = np.where(present, used, 0.0)
    return used, row_sum_in_order(used), row_count(present)


def _used_row(snapshot: ClusterSnapshot, row: int
              ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                         npt.NDArray[np.int64]]:
    """``_used_rows`` of one row in plain Python: the same IEEE operations on the same
    numbers (``tests/core/test_row_refresh.py``), without two dozen numpy calls of fixed cost
    on eight GPUs."""
    mig_slots = snapshot.catalog.mig_slots.tolist()
    popcount = POPCOUNT.tolist()
    used: list[float] = []
    for gpu_type, total, free, replicas, replicas_free, layout, mig_used in zip(
            snapshot.gpu_type[row].tolist(), snapshot.total_mib[row].tolist(),
            snapshot.free_mib[row].tolist(), snapshot.replicas[row].tolist(),
            snapshot.replicas_free[row].tolist(), snapshot.mig_layout[row].tolist(),
            snapshot.mig_used[row].tolist(), strict=True):
        if gpu_type < 0:  # padding
            used.append(0.0)
            continue
        vram = 1.0 - max(free, 0) / float(max(total, 1))
        if layout >= 0:
            slots = mig_slots[gpu_type]
            used.append((popcount[mig_used] - (8 - slots)) / float(max(slots, 1)))
        elif replicas > 0:
            sliced = 1.0 - replicas_free / max(float(replicas), 1.0)
            used.append(max(sliced, vram))
        else:
            used.append(vram)
    total_used = sum(used[1:], used[0]) if used else 0.0
    present = sum(1 for gpu_type in snapshot.gpu_type[row].tolist() if gpu_type >= 0)
    return (np.array([used], dtype=np.float64), np.array([total_used]),
            np.array([present], dtype=np.int64))


def used_fraction(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                  ) -> npt.NDArray[np.float64]:
    """Fraction of each GPU held by pods: VRAM for plain GPUs, replicas for time-sliced ones
    (the larger of replicas and VRAM), slots for MIG-partitioned ones; 0 on padding.
    Through the snapshot's row cache."""
    used, _, _ = snapshot.cache.derive(("used-fraction",), snapshot, _used_rows, rows)
    return used


def used_total(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """(n,) GPU-equivalents held on each node and (n,) its GPUs (row cache)."""
    total, count = snapshot.cache.use(("used-fraction",), snapshot, _used_rows,
                                      lambda arrays: (arrays[1][rows], arrays[2][rows]))
    return total, count


def request_fraction(snapshot: ClusterSnapshot, req: PlacementRequest,
                     rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Fraction of each GPU one unit of ``req`` would take there."""
    kind = req.kind
    if kind is RequestKind.FRACTION:
        return np.full(snapshot.gpu_type[rows].shape, req.request.milli / 1000.0)
    if kind is RequestKind.VRAM:
        return req.request.vram_mib / np.maximum(snapshot.total_mib[rows], 1).astype(np.float64)
    if kind is RequestKind.MIG:
        gpu_type = snapshot.gpu_type[rows]
        _, slices = mig_starts(snapshot, rows, gpu_type, req.mig_index)
        return slices / np.maximum(snapshot.catalog.mig_slots.take(gpu_type), 1)
    replicas = snapshot.replicas[rows]
    return np.where(replicas > 0, 1.0 / np.maximum(replicas, 1), 1.0)


def unit_take(snapshot: ClusterSnapshot, req: PlacementRequest, rows: npt.NDArray[np.int64],
              units: npt.NDArray[np.int16]) -> npt.NDArray[np.float64]:
    """(n,) the least fraction of a GPU one unit of ``req`` takes among the GPUs of each row
    that have a unit (``units > 0``); 0 where none has.

    Equals ``min(request_fraction[units > 0])`` per row, computed without the (n, n_gpus)
    float array: the smallest share is on the largest GPU (VRAM) or the one with the most
    replicas (whole / time-slice)."""
    has = units > 0
    kind = req.kind
    if kind is RequestKind.FRACTION:
        return np.where(row_any(has), req.request.milli / 1000.0, 0.0)
    if kind is RequestKind.VRAM:
        largest = row_max(np.where(has, snapshot.total_mib[rows], 0))
        return np.where(largest > 0, req.request.vram_mib / np.maximum(largest, 1), 0.0)
    if kind is RequestKind.MIG:
        take = np.where(has, request_fraction(snapshot, req, rows), np.inf)
        least = row_min(take)
        return np.where(np.isfinite(least), least, 0.0)
    ways = row_max(np.where(has, np.maximum(snapshot.replicas[rows], 1), 0))
    return np.where(ways > 0, 1.0 / np.maximum(ways, 1), 0.0)


MIXED = -1
"""``row_type`` of a node whose GPUs are of several types."""


def _row_type_rows(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                   ) -> tuple[npt.NDArray[np.int64]]:
    gpu_type = snapshot.gpu_type[rows].astype(np.int64)
    present = gpu_type >= 0
    low = np.where(present, gpu_type, np.iinfo(np.int64).max).min(axis=1)
    high = np.where(present, gpu_type, -1).max(axis=1)
    none = snapshot.catalog.unknown_index
    return (np.where(high < 0, none, np.where(low == high, high, MIXED)),)


def free_by_type(snapshot: ClusterSnapshot) -> npt.NDArray[np.float64]:
    """(n_types + 1,) GPU-equivalents not held by pods, per catalog type, over every node.

    Per node through the row cache (one type per node is the rule; nodes with several types,
    rare, are summed GPU by GPU): O(nodes), not O(GPUs), per call."""
    rows = snapshot.valid_rows()
    n_types = len(snapshot.catalog) + 1
    used, count = used_total(snapshot, rows)
    (row_type,) = snapshot.cache.derive(("row-type",), snapshot, _row_type_rows, rows)
    single = row_type >= 0
    free: npt.NDArray[np.float64] = np.bincount(
        row_type[single], weights=(count - used)[single], minlength=n_types).astype(np.float64)
    mixed = rows[~single]
    if len(mixed):
        types = snapshot.gpu_type[mixed]
        present = types >= 0
        free += np.bincount(types[present], weights=(1.0 - used_fraction(snapshot, mixed))[
            present], minlength=n_types)
    return free
