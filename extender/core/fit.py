"""Which candidate nodes can host a request now, and why not the others.

Vectorized over ``(n_rows, n_gpus)`` (candidate rows of the snapshot x GPU slots): no per-node
Python loop. Performs no input validation (the snapshot's invariants hold).

The kernel (``_fit``) runs in named steps:

1. ``gpu_facts`` / ``gpu_units`` (``core.gpu_units``): per GPU, ``capable`` (could host one
   unit of the request if empty) and ``units`` it can host *now*, by the request kind's rule;
2. a node fits when the allowed, healthy GPUs provide ``count`` units (a VRAM share needs one
   GPU) and, when asked, the node has the CPU and memory;
3. ``_reasons``: the others get the first failing condition in priority order;
4. ``_numbers``: the numbers of each reason's message, as named columns (``core.reasons.
   Numbers``: ``have``, ``among``, ``need``).

Failures are *unresolvable* when capacity alone rules the node out (wrong type, protected, too
small, unhealthy) and *unschedulable* when it is only full now.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.gpu_units import Gpus, Units, gpu_facts, gpu_units
from extender.core.reasons import AMONG, HAVE, NEED, CodedRows, Reason, format_reasons
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero, row_any, row_count, row_max, row_min
from extender.inventory.snapshot import DYNAMIC_MIG, ClusterSnapshot
from extender.model import RequestKind


@dataclass(frozen=True, eq=False)
class FitResult(CodedRows):
    rows: npt.NDArray[np.int64]
    """(n_rows,) candidate rows of the snapshot."""
    code: npt.NDArray[np.int8]
    """(n_rows,) ``Reason`` per row (0 = fits)."""
    params: npt.NDArray[np.int64]
    """(n_rows, 3) numbers for the reason's message: columns ``HAVE``, ``AMONG``, ``NEED``
    (``core.reasons.Numbers``)."""
    units: npt.NDArray[np.int16]
    """(n_rows, n_gpus) units each GPU can host now (0 on GPUs the pod may not use)."""

    def messages(self, snapshot: ClusterSnapshot) -> list[str]:
        return format_reasons(snapshot.catalog, self.code, self.params)


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
    gpus = gpu_facts(snapshot, req, sel)
    units = gpu_units(snapshot, req, sel, gpus)
    need = 1 if req.kind in (RequestKind.VRAM, RequestKind.FRACTION) else req.count
    n_rows = gpus.gpu_type.shape[0]
    code = np.zeros(n_rows, dtype=np.int8)
    params = np.zeros((n_rows, 3), dtype=np.int64)
    short = units.available < need
    cpu_short = mem_short = None
    failing = short
    if check_cpu_memory:
        cpu_short = snapshot.cpu_free[sel] < req.cpu_milli
        mem_short = snapshot.memory_free[sel] < req.memory_mib
        failing = short | cpu_short | mem_short
    if not failing.any():
        return code, params, units.units
    capacity = _capacity(gpus, units)
    code[:] = _reasons(snapshot, req, sel, gpus, units, need=need, capacity=capacity,
                       short=short, cpu_short=cpu_short, mem_short=mem_short)
    # the numbers of each message, computed on the rows that carry the code
    for reason in np.unique(code[failing]):
        idx = flat_nonzero(code == reason)
        numbers = _numbers(snapshot, req, Reason(int(reason)), idx, sel, gpus=gpus,
                           units=units, need=need, capacity=capacity)
        params[idx, HAVE] = numbers.have
        params[idx, AMONG] = numbers.among
        params[idx, NEED] = numbers.need
    return code, params, units.units


def _capacity(gpus: Gpus, units: Units) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(units the allowed GPUs could hold empty, those of the usable ones) per node."""
    if units.capacity_units is not None:
        return (row_count(np.where(gpus.allowed, units.capacity_units, 0).astype(np.uint8)),
                row_count(np.where(gpus.usable, units.capacity_units, 0).astype(np.uint8)))
    return row_count(gpus.allowed & units.capable), row_count(gpus.usable & units.capable)


_TOO_SMALL = {RequestKind.WHOLE: Reason.TOO_FEW_GPUS, RequestKind.FRACTION: Reason.TOO_FEW_GPUS,
              RequestKind.SHARED: Reason.NOT_TIME_SLICED, RequestKind.VRAM: Reason.TOO_LITTLE_VRAM}
"""Per request kind, the reason of a node whose allowed GPUs are too few or too small."""
_BUSY = {RequestKind.WHOLE: Reason.GPUS_BUSY, RequestKind.SHARED: Reason.REPLICAS_BUSY,
         RequestKind.VRAM: Reason.VRAM_BUSY, RequestKind.FRACTION: Reason.FRACTION_BUSY,
         RequestKind.MIG: Reason.MIG_BUSY}
"""Per request kind, the reason of a node that could host the pod once pods leave."""


def _reasons(snapshot: ClusterSnapshot, req: PlacementRequest,
             sel: npt.NDArray[np.int64] | slice, gpus: Gpus, units: Units, *, need: int,
             capacity: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
             short: npt.NDArray[np.bool_], cpu_short: npt.NDArray[np.bool_] | None,
             mem_short: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.int8]:
    """Why each node fails: per-node conditions in priority order (first match wins; 0 on the
    rows that fit)."""
    kind = req.kind
    allowed_capacity, usable_capacity = capacity
    checks: list[tuple[npt.NDArray[np.bool_], Reason]] = [
        (~snapshot.node_valid[sel], Reason.UNKNOWN_NODE),
        (~row_any(gpus.present), Reason.NO_GPUS),
        (~row_any(gpus.accepted), Reason.TYPE_MISMATCH),
        (~row_any(gpus.allowed), Reason.PROTECTED),
    ]
    if gpus.dra:
        checks.append((snapshot.node_dra[sel], Reason.DRA_MANAGED))
    if kind is RequestKind.MIG:
        checks.append((allowed_capacity == 0, Reason.NO_MIG_PROFILE))
        checks.append((allowed_capacity < need, Reason.TOO_FEW_MIG_INSTANCES))
    else:
        checks.append((~row_any(gpus.allowed & gpus.not_mig), Reason.MIG_PARTITIONED))
        checks.append((allowed_capacity < need, _TOO_SMALL[kind]))
    checks.append((usable_capacity < need, Reason.UNHEALTHY))
    if cpu_short is not None and mem_short is not None:
        checks.append((cpu_short, Reason.CPU_BUSY))
        checks.append((mem_short, Reason.MEMORY_BUSY))
    checks.append((short, _BUSY[kind]))
    out: npt.NDArray[np.int8] = np.select([c for c, _ in checks], [int(r) for _, r in checks], 0)
    return out


@dataclass(frozen=True)
class _Numbers:
    """A reason's numbers for its rows (``core.reasons.Numbers``' columns; a scalar is the
    same for every row)."""

    have: npt.ArrayLike = 0
    among: npt.ArrayLike = 0
    need: npt.ArrayLike = 0


def _numbers(snapshot: ClusterSnapshot, req: PlacementRequest, reason: Reason,
             idx: npt.NDArray[np.int64], sel: npt.NDArray[np.int64] | slice, *, gpus: Gpus,
             units: Units, need: int,
             capacity: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]) -> _Numbers:
    """The numbers of ``reason``'s message for rows ``idx`` (positions in ``sel``)."""
    allowed = gpus.allowed[idx]
    if reason is Reason.TYPE_MISMATCH:
        # these rows have GPUs: the largest type is a plain max (padding is -1), and the
        # smallest a max of the uint16 view (padding -1 reads 65535)
        gpu_type = gpus.gpu_type
        types = gpu_type if len(idx) * 4 > len(gpu_type) else gpu_type[idx]
        low = row_min(types.view(np.uint16)).astype(np.int64)
        high = row_max(types).astype(np.int64)
        if types is gpu_type:
            low, high = low[idx], high[idx]
        return _Numbers(have=low, among=high)
    if reason is Reason.PROTECTED:
        among = gpus.accepted[idx]
        types = gpus.gpu_type[idx]
        return _Numbers(have=row_min(np.where(among, types, 1 << 14)),
                        among=row_max(np.where(among, types, -1)))
    if reason is Reason.MIG_PARTITIONED:
        return _Numbers(have=row_count(allowed))
    if reason in (Reason.TOO_FEW_GPUS, Reason.NOT_TIME_SLICED, Reason.TOO_FEW_MIG_INSTANCES):
        return _Numbers(have=capacity[0][idx], need=need)
    if reason is Reason.TOO_LITTLE_VRAM:
        total = snapshot.total_mib[sel][idx]
        return _Numbers(have=row_max(np.where(allowed & gpus.not_mig[idx], total, 0)),
                        need=req.request.vram_mib)
    healthy = gpus.healthy[idx]
    if reason is Reason.UNHEALTHY:
        return _Numbers(have=row_count(allowed & ~healthy), among=row_count(allowed & healthy),
                        need=need)
    if reason is Reason.CPU_BUSY:
        return _Numbers(have=snapshot.cpu_free[sel][idx], need=req.cpu_milli)
    if reason is Reason.MEMORY_BUSY:
        return _Numbers(have=snapshot.memory_free[sel][idx], need=req.memory_mib)
    return _busy_numbers(snapshot, req, reason, idx, sel,
                         candidate=allowed & healthy & units.capable[idx],
                         available=units.available[idx], need=need)


def _busy_numbers(snapshot: ClusterSnapshot, req: PlacementRequest, reason: Reason,
                  idx: npt.NDArray[np.int64], sel: npt.NDArray[np.int64] | slice, *,
                  candidate: npt.NDArray[np.bool_], available: npt.NDArray[np.int64],
                  need: int) -> _Numbers:
    """A full node's numbers: ``among`` its candidate GPUs (allowed, healthy, capable)."""
    candidates = row_count(candidate)
    if reason is Reason.GPUS_BUSY:
        return _Numbers(have=candidates - available, among=candidates, need=need)
    if reason is Reason.REPLICAS_BUSY:
        return _Numbers(have=available, among=candidates, need=need)
    if reason is Reason.MIG_BUSY:
        return _Numbers(have=available, need=need)
    free = snapshot.free_mib[sel][idx]
    if reason is Reason.VRAM_BUSY:
        best = row_max(np.where(candidate, free, np.iinfo(np.int32).min))
        return _Numbers(have=np.maximum(best, 0), among=candidates, need=req.request.vram_mib)
    if reason is Reason.FRACTION_BUSY:
        total = np.maximum(snapshot.total_mib[sel][idx], 1)
        best = row_max(np.where(candidate, free.astype(np.int64) * 1000 // total, -1))
        return _Numbers(have=np.maximum(best, 0), among=candidates, need=req.request.milli)
    return _Numbers()  # UNKNOWN_NODE, NO_GPUS, NO_MIG_PROFILE, DRA_MANAGED carry no numbers
