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
from extender.core.rowops import row_any, row_count, row_max, row_min
from extender.inventory.layout import FREE_STARTS, POPCOUNT
from extender.inventory.snapshot import DYNAMIC_MIG, ClusterSnapshot
from extender.model import RequestKind


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


def type_mask(lookup: npt.NDArray[np.bool_], gpu_type: npt.NDArray[np.int16]
              ) -> npt.NDArray[np.bool_]:
    """``lookup[gpu_type]`` for a per-type bool table whose last entry is the unknown type,
    False on padding (-1). A pod names few types (or excludes few): a handful of comparisons
    is cheaper than a gather."""
    n_types = len(lookup) - 1
    if lookup[n_types]:  # pragma: no cover - no pod accepts the unknown type
        return lookup.take(gpu_type) & (gpu_type >= 0)
    accepted = np.flatnonzero(lookup)
    if len(accepted) <= 3:
        out = np.zeros(gpu_type.shape, dtype=bool)
        for t in accepted:
            out |= gpu_type == t
        return out
    refused = np.flatnonzero(~lookup)  # includes the unknown type
    if len(refused) <= 4:
        out = gpu_type >= 0
        for t in refused:
            out &= gpu_type != t
        return out
    return lookup.take(gpu_type) & (gpu_type >= 0)


def _covers(rows: npt.NDArray[np.int64], n_nodes: int) -> bool:
    """``rows`` is exactly ``0 .. n_nodes - 1`` in order."""
    return len(rows) == n_nodes and (n_nodes == 0 or (
        int(rows[0]) == 0 and int(rows[-1]) == n_nodes - 1 and
        bool(np.all(rows[1:] - rows[:-1] == 1))))


def mig_starts(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64] | slice,
               gpu_type: npt.NDArray[np.int16], mig_index: int
               ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int8]]:
    """Legal start mask and slot span of a MIG profile on each GPU of ``rows``.

    Returns ``(starts, slices)``, both ``(n_rows, n_gpus)``; zero where the GPU is not
    partitioned or cannot hold the profile. Padding (type -1) reads the unknown type's column
    (the last), which has no MIG profile.
    """
    catalog = snapshot.catalog
    slices = catalog.mig.slices[mig_index].take(gpu_type)
    layout = snapshot.mig_layout[rows]
    dynamic = catalog.mig.start_mask[mig_index].take(gpu_type)
    static = snapshot.layouts[:, mig_index].take(np.maximum(layout, 0))
    starts = np.where(layout == DYNAMIC_MIG, dynamic, static)
    starts = np.where((layout >= 0) & (slices > 0), starts, 0).astype(np.uint8)
    return starts, slices


def fit(snapshot: ClusterSnapshot, req: PlacementRequest, rows: npt.NDArray[np.int64], *,
        check_cpu_memory: bool = False) -> FitResult:
    """Fit ``req`` on snapshot ``rows`` (shape ``(n_rows,)``).

    When the rows cover most of the snapshot (a filter over the whole cluster) the kernel runs
    on the snapshot's arrays in place and picks the rows at the end, which is cheaper than
    gathering every input array first. Worked tables: ``tests/core/test_fit.py``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    n_nodes = snapshot.n_nodes
    if len(rows) * 2 >= n_nodes:
        code, params, units = _fit(snapshot, req, slice(None), check_cpu_memory)
        if not _covers(rows, n_nodes):
            code, params, units = code[rows], params[rows], units[rows]
    else:
        code, params, units = _fit(snapshot, req, rows, check_cpu_memory)
    return FitResult(rows=rows, code=code, params=params, units=units)


def _fit(snapshot: ClusterSnapshot, req: PlacementRequest,
         sel: npt.NDArray[np.int64] | slice, check_cpu_memory: bool
         ) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64], npt.NDArray[np.int16]]:
    """The kernel on ``snapshot.<array>[sel]``: (code, params, units)."""
    catalog = snapshot.catalog
    kind = req.kind
    gpu_type = snapshot.gpu_type[sel]
    n_rows = gpu_type.shape[0]
    present = gpu_type >= 0
    accepted = type_mask(req.accepted, gpu_type)
    allowed = accepted if np.array_equal(req.allowed, req.accepted) else \
        type_mask(req.allowed, gpu_type)
    healthy = snapshot.healthy[sel]
    not_mig = snapshot.mig_layout[sel] < 0
    need = 1 if kind in (RequestKind.VRAM, RequestKind.FRACTION) else req.count
    usable = allowed & healthy
    dra = kind is not RequestKind.WHOLE and bool(snapshot.node_dra.shape[0])
    if dra:
        # claims hold DRA GPUs: the extender places nothing of its own there
        usable = usable & ~snapshot.node_dra[sel][:, None]

    capacity_units: npt.NDArray[np.int8] | None = None
    if kind is RequestKind.MIG:
        # only partitioned GPUs of allowed types can hold an instance: work on those alone
        capacity_units = np.zeros(gpu_type.shape, dtype=np.int8)
        now_units = np.zeros(gpu_type.shape, dtype=np.uint8)
        where = np.nonzero(allowed & ~not_mig)
        if len(where[0]):
            types = gpu_type[where]
            layout = snapshot.mig_layout[sel][where]
            p = req.mig_index
            slices = catalog.mig.slices[p].take(types)
            starts = np.where(layout == DYNAMIC_MIG, catalog.mig.start_mask[p].take(types),
                              snapshot.layouts[:, p].take(np.maximum(layout, 0)))
            starts = np.where(slices > 0, starts, 0).astype(np.uint8)
            used = snapshot.mig_used[sel][where].astype(np.intp)
            free_starts = FREE_STARTS.reshape(-1).take(slices.astype(np.intp) * 256 + used)
            capacity_units[where] = POPCOUNT.take(starts)
            now_units[where] = np.where(healthy[where], POPCOUNT.take(starts & free_starts), 0)
        capable = capacity_units > 0
        available = row_count(now_units)
        units = now_units.astype(np.int16)
    else:
        total = snapshot.total_mib[sel]
        free = snapshot.free_mib[sel]
        if kind is RequestKind.WHOLE or kind is RequestKind.SHARED:
            replicas = snapshot.replicas[sel]
            sliced = replicas > 0
            # time-slice replicas serve one resource name: nvidia.com/gpu.shared units
            # (renamed) only nvidia.com/gpu.shared requests, the others nvidia.com/gpu ones
            renamed = snapshot.replicas_shared[sel]
            # a replica needs its share of VRAM free: free >= total // replicas (sliced GPUs
            # are few: divide only there)
            replica_ok = np.zeros(sliced.shape, dtype=bool)
            where = np.nonzero(sliced)
            if len(where[0]):
                replica_ok[where] = (snapshot.replicas_free[sel][where] > 0) & \
                    (free[where] >= total[where] // replicas[where])
            if kind is RequestKind.WHOLE:
                capable = not_mig & ~renamed
                now = np.where(sliced, replica_ok,
                               (snapshot.pods[sel] == 0) & (free == total))
            else:
                capable = not_mig & (replicas > 1) & renamed
                now = replica_ok
        elif kind is RequestKind.FRACTION:
            capable = not_mig & (total > 0)
            # free >= total * milli // 1000  <=>  (free + 1) * 1000 > total * milli (integers;
            # int64: no overflow)
            now = (free.astype(np.int64) + 1) * 1000 > total.astype(np.int64) * req.request.milli
        else:  # VRAM
            capable = not_mig & (total >= req.request.vram_mib)
            now = free >= req.request.vram_mib
        fits_now = usable & capable & now
        available = row_count(fits_now)
        units = fits_now.astype(np.int16)

    code = np.zeros(n_rows, dtype=np.int8)
    params = np.zeros((n_rows, 3), dtype=np.int64)
    short = available < need
    cpu_short = mem_short = None
    if check_cpu_memory:
        cpu_free = snapshot.cpu_free[sel]
        memory_free = snapshot.memory_free[sel]
        cpu_short = cpu_free < req.cpu_milli
        mem_short = memory_free < req.memory_mib
        failing = short | cpu_short | mem_short
    else:
        failing = short
    if not failing.any():
        return code, params, units

    # -- why the others fail: per-node conditions in priority order (first match wins)
    if capacity_units is not None:
        capacity = row_count(np.where(allowed, capacity_units, 0).astype(np.uint8))
        healthy_capacity = row_count(np.where(usable, capacity_units, 0).astype(np.uint8))
    else:
        capacity = row_count(allowed & capable)
        healthy_capacity = row_count(usable & capable)
    checks: list[tuple[npt.NDArray[np.bool_], Reason]] = [
        (~snapshot.node_valid[sel], Reason.UNKNOWN_NODE),
        (~row_any(present), Reason.NO_GPUS),
        (~row_any(accepted), Reason.TYPE_MISMATCH),
        (~row_any(allowed), Reason.PROTECTED),
    ]
    if dra:
        checks.append((snapshot.node_dra[sel], Reason.DRA_MANAGED))
    if kind is not RequestKind.MIG:
        checks.append((~row_any(allowed & not_mig), Reason.MIG_PARTITIONED))
    if kind is RequestKind.MIG:
        checks.append((capacity == 0, Reason.NO_MIG_PROFILE))
        checks.append((capacity < need, Reason.TOO_FEW_MIG_INSTANCES))
    else:
        checks.append((capacity < need, {
            RequestKind.WHOLE: Reason.TOO_FEW_GPUS, RequestKind.FRACTION: Reason.TOO_FEW_GPUS,
            RequestKind.SHARED: Reason.NOT_TIME_SLICED,
            RequestKind.VRAM: Reason.TOO_LITTLE_VRAM}[kind]))
    checks.append((healthy_capacity < need, Reason.UNHEALTHY))
    if cpu_short is not None and mem_short is not None:
        checks.append((cpu_short, Reason.CPU_BUSY))
        checks.append((mem_short, Reason.MEMORY_BUSY))
    busy = {RequestKind.WHOLE: Reason.GPUS_BUSY, RequestKind.SHARED: Reason.REPLICAS_BUSY,
            RequestKind.VRAM: Reason.VRAM_BUSY, RequestKind.FRACTION: Reason.FRACTION_BUSY,
            RequestKind.MIG: Reason.MIG_BUSY}[kind]
    checks.append((short, busy))
    code[:] = np.select([c for c, _ in checks], [int(r) for _, r in checks], 0)

    # -- the numbers of each message, computed on the rows that carry the code
    for reason in np.unique(code[failing]):
        idx = np.flatnonzero(code == reason)
        values = _params(snapshot, req, Reason(int(reason)), idx, sel, need=need,
                         gpu_type=gpu_type, present=present, accepted=accepted,
                         allowed=allowed, healthy=healthy, not_mig=not_mig, capable=capable,
                         capacity=capacity, available=available)
        for column, value in enumerate(values):
            params[idx, column] = value
    return code, params, units


def _params(snapshot: ClusterSnapshot, req: PlacementRequest, reason: Reason,
            idx: npt.NDArray[np.int64], sel: npt.NDArray[np.int64] | slice, *, need: int,
            gpu_type: npt.NDArray[np.int16], present: npt.NDArray[np.bool_],
            accepted: npt.NDArray[np.bool_], allowed: npt.NDArray[np.bool_],
            healthy: npt.NDArray[np.bool_], not_mig: npt.NDArray[np.bool_],
            capable: npt.NDArray[np.bool_], capacity: npt.NDArray[np.int64],
            available: npt.NDArray[np.int64]) -> tuple[npt.ArrayLike, ...]:
    """(a, b, c) of ``reason``'s message for rows ``idx`` (positions in ``sel``)."""
    if reason is Reason.TYPE_MISMATCH:
        # these rows have GPUs: the largest type is a plain max (padding is -1), and the
        # smallest a max of the uint16 view (padding -1 reads 65535)
        types = gpu_type if len(idx) * 4 > len(gpu_type) else gpu_type[idx]
        low = row_min(types.view(np.uint16)).astype(np.int64)
        high = row_max(types).astype(np.int64)
        if types is gpu_type:
            low, high = low[idx], high[idx]
        return (low, high, 0)
    if reason is Reason.PROTECTED:
        among = accepted[idx]
        types = gpu_type[idx]
        return (row_min(np.where(among, types, 1 << 14)), row_max(np.where(among, types, -1)),
                0)
    if reason is Reason.MIG_PARTITIONED:
        return (row_count(allowed[idx]), 0, 0)
    if reason in (Reason.TOO_FEW_GPUS, Reason.NOT_TIME_SLICED, Reason.TOO_FEW_MIG_INSTANCES):
        return (capacity[idx], need, 0)
    if reason is Reason.TOO_LITTLE_VRAM:
        total = snapshot.total_mib[sel][idx]
        return (row_max(np.where(allowed[idx] & not_mig[idx], total, 0)),
                req.request.vram_mib, 0)
    if reason is Reason.UNHEALTHY:
        return (row_count(allowed[idx] & ~healthy[idx]), row_count(allowed[idx] & healthy[idx]),
                need)
    if reason is Reason.CPU_BUSY:
        return (snapshot.cpu_free[sel][idx], req.cpu_milli, 0)
    if reason is Reason.MEMORY_BUSY:
        return (snapshot.memory_free[sel][idx], req.memory_mib, 0)
    candidates = row_count(allowed[idx] & healthy[idx] & capable[idx])
    if reason is Reason.GPUS_BUSY:
        return (candidates - available[idx], candidates, need)
    if reason is Reason.REPLICAS_BUSY:
        return (available[idx], candidates, need)
    if reason is Reason.MIG_BUSY:
        return (available[idx], 0, need)
    free = snapshot.free_mib[sel][idx]
    mask = allowed[idx] & healthy[idx] & capable[idx]
    if reason is Reason.VRAM_BUSY:
        best = row_max(np.where(mask, free, np.iinfo(np.int32).min))
        return (np.maximum(best, 0), candidates, req.request.vram_mib)
    if reason is Reason.FRACTION_BUSY:
        total = np.maximum(snapshot.total_mib[sel][idx], 1)
        best = row_max(np.where(mask, free.astype(np.int64) * 1000 // total, -1))
        return (np.maximum(best, 0), candidates, req.request.milli)
    return (0, 0, 0)  # UNKNOWN_NODE, NO_GPUS, NO_MIG_PROFILE carry no numbers


