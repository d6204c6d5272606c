"""Which candidate nodes can host a request now, and why not the others.

Vectorized over ``(n_rows, n_gpus)`` (candidate rows of the snapshot x GPU slots): no per-node
Python loop. Performs no input validation (the snapshot's invariants hold).

Per GPU we compute:

- ``capable``: could host one unit of the request if empty (type-independent capacity: not
  partitioned for whole/VRAM/replica requests, big enough, time-sliced, has the MIG profile);
- ``units``: units it can host *now* (1 or 0; MIG: free legal placements of the profile).

A node fits when the allowed, healthy GPUs provide ``count`` units (a VRAM share needs one GPU).
Failures are *unresolvable* when capacity alone rules the node out (wrong type, protected, too
small, unhealthy) and *unschedulable* when it is only full now.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.reasons import VERDICT_BY_CODE, Reason, format_reasons
from extender.core.request import PlacementRequest
from extender.inventory.layout import FREE_STARTS, POPCOUNT
from extender.inventory.snapshot import DYNAMIC_MIG, ClusterSnapshot
from extender.model import RequestKind, Verdict


@dataclass(frozen=True, eq=False)
class FitResult:
    rows: npt.NDArray[np.int64]
    """(n_rows,) candidate rows of the snapshot."""
    code: npt.NDArray[np.int8]
    """(n_rows,) ``Reason`` per row (0 = fits)."""
    params: npt.NDArray[np.int64]
    """(n_rows, 3) numbers for the reason's message."""
    units: npt.NDArray[np.int16]
    """(n_rows, n_gpus) units each GPU can host now (0 on GPUs the pod may not use)."""

    @property
    def verdict(self) -> npt.NDArray[np.int8]:
        """(n_rows,) ``Verdict`` values."""
        return VERDICT_BY_CODE[self.code]

    @property
    def fits(self) -> npt.NDArray[np.bool_]:
        return self.code == Reason.FITS

    def messages(self, snapshot: ClusterSnapshot) -> list[str]:
        return format_reasons(snapshot.catalog, self.code, self.params)


def mig_starts(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64], gpu_type: npt.NDArray[
        np.int16], mig_index: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int8]]:
    """Legal start mask and slot span of a MIG profile on each GPU of ``rows``.

    Returns ``(starts, slices)``, both ``(n_rows, n_gpus)``; zero where the GPU is not
    partitioned or cannot hold the profile.
    """
    catalog = snapshot.catalog
    type_col = np.where(gpu_type >= 0, gpu_type, catalog.unknown_index)
    slices = catalog.mig.slices[mig_index][type_col]
    layout = snapshot.mig_layout[rows]
    dynamic = catalog.mig.start_mask[mig_index][type_col]
    static = snapshot.layouts[np.maximum(layout, 0), mig_index]
    starts = np.where(layout == DYNAMIC_MIG, dynamic, static)
    starts = np.where((layout >= 0) & (slices > 0), starts, 0).astype(np.uint8)
    return starts, slices


def fit(snapshot: ClusterSnapshot, req: PlacementRequest, rows: npt.NDArray[np.int64], *,
        check_cpu_memory: bool = False) -> FitResult:
    """Fit ``req`` on snapshot ``rows`` (shape ``(n_rows,)``).

    >>> # see tests/core/test_fit.py for worked tables
    """
    catalog = snapshot.catalog
    n_rows = len(rows)
    kind = req.kind
    gpu_type = snapshot.gpu_type[rows]
    present = gpu_type >= 0
    type_col = np.where(present, gpu_type, catalog.unknown_index)
    accepted = present & req.accepted[type_col]
    allowed = present & req.allowed[type_col]
    healthy = snapshot.healthy[rows]
    total = snapshot.total_mib[rows]
    free = snapshot.free_mib[rows]
    replicas = snapshot.replicas[rows]
    replicas_free = snapshot.replicas_free[rows]
    not_mig = snapshot.mig_layout[rows] < 0
    share = np.where(replicas > 0, total // np.maximum(replicas, 1), 0)

    if kind is RequestKind.MIG:
        starts, slices = mig_starts(snapshot, rows, gpu_type, req.mig_index)
        capacity_units = POPCOUNT[starts].astype(np.int16)
        used = snapshot.mig_used[rows]
        units = POPCOUNT[starts & FREE_STARTS[slices, used]].astype(np.int16)
        capable = capacity_units > 0
    else:
        if kind is RequestKind.WHOLE:
            capable = not_mig
            now = np.where(replicas > 0, (replicas_free > 0) & (free >= share),
                           (snapshot.pods[rows] == 0) & (free == total))
        elif kind is RequestKind.SHARED:
            capable = not_mig & (replicas > 1)
            now = (replicas_free > 0) & (free >= share)
        elif kind is RequestKind.FRACTION:
            capable = not_mig & (total > 0)
            now = free >= fraction_mib(total, req.request.milli)
        else:  # VRAM
            capable = not_mig & (total >= req.request.vram_mib)
            now = free >= req.request.vram_mib
        capacity_units = capable.astype(np.int16)
        units = (capable & now).astype(np.int16)

    usable_now = allowed & healthy
    units = np.where(usable_now, units, 0).astype(np.int16)
    need = 1 if kind in (RequestKind.VRAM, RequestKind.FRACTION) else req.count

    code = np.zeros(n_rows, dtype=np.int8)
    params = np.zeros((n_rows, 3), dtype=np.int64)

    def fail(mask: npt.ArrayLike, reason: Reason, a: npt.ArrayLike = 0, b: npt.ArrayLike = 0,
             c: npt.ArrayLike = 0) -> None:
        """Record ``reason`` where ``mask`` holds and no earlier reason was recorded."""
        hit = np.asarray(mask, dtype=bool) & (code == 0)
        if not hit.any():
            return
        code[hit] = reason
        for column, value in enumerate((a, b, c)):
            params[hit, column] = np.broadcast_to(np.asarray(value), (n_rows,))[hit]

    fail(~snapshot.node_valid[rows], Reason.UNKNOWN_NODE)
    fail(~present.any(axis=1), Reason.NO_GPUS)
    low = np.where(present, type_col, 1 << 14).min(axis=1)
    high = np.where(present, type_col, -1).max(axis=1)
    fail(~accepted.any(axis=1), Reason.TYPE_MISMATCH, low, high)
    protected_low = np.where(accepted, type_col, 1 << 14).min(axis=1)
    protected_high = np.where(accepted, type_col, -1).max(axis=1)
    fail(~allowed.any(axis=1), Reason.PROTECTED, protected_low, protected_high)

    if kind is not RequestKind.MIG:
        fail(~(allowed & not_mig).any(axis=1), Reason.MIG_PARTITIONED, allowed.sum(axis=1))
    capacity = np.where(allowed, capacity_units, 0).sum(axis=1)
    if kind in (RequestKind.WHOLE, RequestKind.FRACTION):
        fail(capacity < need, Reason.TOO_FEW_GPUS, capacity, need)
    elif kind is RequestKind.SHARED:
        fail(capacity < need, Reason.NOT_TIME_SLICED, capacity, need)
    elif kind is RequestKind.VRAM:
        largest = np.where(allowed & not_mig, total, 0).max(axis=1)
        fail(capacity < need, Reason.TOO_LITTLE_VRAM, largest, req.request.vram_mib)
    else:
        fail(capacity == 0, Reason.NO_MIG_PROFILE)
        fail(capacity < need, Reason.TOO_FEW_MIG_INSTANCES, capacity, need)
    healthy_capacity = np.where(allowed & healthy, capacity_units, 0).sum(axis=1)
    unhealthy = (allowed & ~healthy).sum(axis=1)
    fail(healthy_capacity < need, Reason.UNHEALTHY, unhealthy, (allowed & healthy).sum(axis=1),
         need)

    if check_cpu_memory:
        cpu_free = snapshot.cpu_free[rows]
        memory_free = snapshot.memory_free[rows]
        fail(cpu_free < req.cpu_milli, Reason.CPU_BUSY, cpu_free, req.cpu_milli)
        fail(memory_free < req.memory_mib, Reason.MEMORY_BUSY, memory_free, req.memory_mib)

    available = units.sum(axis=1)
    short = available < need
    if short.any():
        candidates = allowed & healthy & (capacity_units > 0)
        if kind is RequestKind.WHOLE:
            fail(short, Reason.GPUS_BUSY, candidates.sum(axis=1) - available,
                 candidates.sum(axis=1), need)
        elif kind is RequestKind.SHARED:
            fail(short, Reason.REPLICAS_BUSY, available, candidates.sum(axis=1), need)
        elif kind is RequestKind.VRAM:
            best = np.where(candidates, free, np.iinfo(np.int32).min).max(axis=1)
            fail(short, Reason.VRAM_BUSY, np.maximum(best, 0), candidates.sum(axis=1),
                 req.request.vram_mib)
        elif kind is RequestKind.FRACTION:
            best = np.where(candidates, free * 1000 // np.maximum(total, 1), -1).max(axis=1)
            fail(short, Reason.FRACTION_BUSY, np.maximum(best, 0), candidates.sum(axis=1),
                 req.request.milli)
        else:
            fail(short, Reason.MIG_BUSY, available, 0, need)
    return FitResult(rows=rows, code=code, params=params, units=units)


def fraction_mib(total: npt.NDArray[np.int32] | int, milli: int) -> npt.NDArray[np.int64] | int:
    """VRAM a ``milli`` share of a GPU with ``total`` MiB holds (rounded down, so shares that
    add up to one GPU always fit on it)."""
    return np.asarray(total, dtype=np.int64) * milli // 1000 if isinstance(total, np.ndarray) \
        else int(total) * milli // 1000


def verdict_counts(result: FitResult) -> dict[Verdict, int]:
    counts = np.bincount(result.verdict, minlength=3)
    return {v: int(counts[v.value]) for v in Verdict}
