"""Per request kind, what each GPU of the candidate rows can host: the first step of
``core.fit``'s kernel.

``gpu_facts`` reads what any request kind needs (type, acceptance, health, MIG); ``gpu_units``
then asks the request kind's own rule: per GPU, ``capable`` (could host one unit if empty:
not partitioned for whole/VRAM/replica requests, big enough, time-sliced, has the MIG
profile) and ``units`` it hosts now (1 or 0; MIG: free legal placements of the profile).
Vectorized over ``(n_rows, n_gpus)``; no input validation (the snapshot's invariants hold).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero, row_count
from extender.inventory.layout import FREE_STARTS, POPCOUNT
from extender.inventory.snapshot import DYNAMIC_MIG, ClusterSnapshot
from extender.model import RequestKind


def type_mask(lookup: npt.NDArray[np.bool_], gpu_type: npt.NDArray[np.int16]
              ) -> npt.NDArray[np.bool_]:
    """``lookup[gpu_type]`` for a per-type bool table whose last entry is the unknown type,
    False on padding (-1). A pod names few types (or excludes few): a handful of comparisons
    is cheaper than a gather."""
    n_types = len(lookup) - 1
    if lookup[n_types]:  # pragma: no cover - no pod accepts the unknown type
        return lookup.take(gpu_type) & (gpu_type >= 0)
    accepted = flat_nonzero(lookup)
    if len(accepted) <= 3:
        out = np.zeros(gpu_type.shape, dtype=bool)
        for t in accepted:
            out |= gpu_type == t
        return out
    refused = flat_nonzero(~lookup)  # includes the unknown type
    if len(refused) <= 4:
        out = gpu_type >= 0
        for t in refused:
            out &= gpu_type != t
        return out
    return lookup.take(gpu_type) & (gpu_type >= 0)


@dataclass(frozen=True, eq=False)
class Gpus:
    """What the kernel knows of each GPU of the selected rows, for any request kind: all
    ``(n_rows, n_gpus)`` bool arrays but ``gpu_type``."""

    gpu_type: npt.NDArray[np.int16]
    present: npt.NDArray[np.bool_]
    accepted: npt.NDArray[np.bool_]
    """Of a type the pod accepts."""
    allowed: npt.NDArray[np.bool_]
    """Accepted, and not protected from the pod."""
    healthy: npt.NDArray[np.bool_]
    not_mig: npt.NDArray[np.bool_]
    usable: npt.NDArray[np.bool_]
    """Allowed, healthy, and not on a DRA node (shares, MIG, replicas)."""
    dra: bool
    """The request kind stays off DRA nodes and the snapshot has some."""


@dataclass(frozen=True, eq=False)
class Units:
    """Per GPU, what one request kind can use: ``capable`` (of one unit if empty), ``units``
    it hosts now, and per node ``available`` units."""

    capable: npt.NDArray[np.bool_]
    units: npt.NDArray[np.int16]
    available: npt.NDArray[np.int64]
    capacity_units: npt.NDArray[np.int8] | None = None
    """MIG: instances each GPU could hold empty (else a GPU holds one unit if capable)."""


def gpu_facts(snapshot: ClusterSnapshot, req: PlacementRequest,
          sel: npt.NDArray[np.int64] | slice) -> Gpus:
    gpu_type = snapshot.gpu_type[sel]
    accepted = type_mask(req.accepted, gpu_type)
    allowed = accepted if np.array_equal(req.allowed, req.accepted) else \
        type_mask(req.allowed, gpu_type)
    healthy = snapshot.healthy[sel]
    usable = allowed & healthy
    dra = req.kind is not RequestKind.WHOLE and bool(snapshot.node_dra.shape[0])
    if dra:
        # claims hold DRA GPUs: the extender places nothing of its own there
        usable = usable & ~snapshot.node_dra[sel][:, None]
    return Gpus(gpu_type=gpu_type, present=gpu_type >= 0, accepted=accepted, allowed=allowed,
                 healthy=healthy, not_mig=snapshot.mig_layout[sel] < 0, usable=usable, dra=dra)


def _mig_units(snapshot: ClusterSnapshot, req: PlacementRequest,
               sel: npt.NDArray[np.int64] | slice, gpus: Gpus) -> Units:
    """Only partitioned GPUs of allowed types can hold an instance: work on those alone."""
    catalog = snapshot.catalog
    shape = gpus.gpu_type.shape
    capacity_units = np.zeros(shape, dtype=np.int8)
    now_units = np.zeros(shape, dtype=np.uint8)
    where = np.nonzero(gpus.allowed & ~gpus.not_mig)
    if len(where[0]):
        types = gpus.gpu_type[where]
        layout = snapshot.mig_layout[sel][where]
        p = req.mig_index
        slices = catalog.mig.slices[p].take(types)
        starts = np.where(layout == DYNAMIC_MIG, catalog.mig.start_mask[p].take(types),
                          snapshot.layouts[:, p].take(np.maximum(layout, 0)))
        starts = np.where(slices > 0, starts, 0).astype(np.uint8)
        used = snapshot.mig_used[sel][where].astype(np.intp)
        free_starts = FREE_STARTS.reshape(-1).take(slices.astype(np.intp) * 256 + used)
        capacity_units[where] = POPCOUNT.take(starts)
        now_units[where] = np.where(gpus.healthy[where], POPCOUNT.take(starts & free_starts), 0)
    return Units(capable=capacity_units > 0, units=now_units.astype(np.int16),
                  available=row_count(now_units), capacity_units=capacity_units)


_GpuNow = tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]
"""(capable, fits now) per GPU for one unit of a non-MIG request."""


def _replica_ok(snapshot: ClusterSnapshot, sel: npt.NDArray[np.int64] | slice,
                sliced: npt.NDArray[np.bool_], replicas: npt.NDArray[np.int16], *,
                total: npt.NDArray[np.int32], free: npt.NDArray[np.int32]
                ) -> npt.NDArray[np.bool_]:
    """A time-sliced GPU (``sliced``: replicas > 0) has a replica free and that replica's
    share of VRAM free: free >= total // replicas (sliced GPUs are few: divide only there)."""
    replica_ok = np.zeros(sliced.shape, dtype=bool)
    where = np.nonzero(sliced)
    if len(where[0]):
        replica_ok[where] = (snapshot.replicas_free[sel][where] > 0) & \
            (free[where] >= total[where] // replicas[where])
    return replica_ok


def _whole_now(snapshot: ClusterSnapshot, req: PlacementRequest,
               sel: npt.NDArray[np.int64] | slice, gpus: Gpus) -> _GpuNow:
    """nvidia.com/gpu: a whole GPU free, or a replica of a GPU time-sliced under that name
    (time-slice replicas serve one resource name: nvidia.com/gpu.shared units (renamed) only
    nvidia.com/gpu.shared requests, the others nvidia.com/gpu ones)."""
    total = snapshot.total_mib[sel]
    free = snapshot.free_mib[sel]
    replicas = snapshot.replicas[sel]
    sliced = replicas > 0
    replica_ok = _replica_ok(snapshot, sel, sliced, replicas, total=total, free=free)
    capable = gpus.not_mig & ~snapshot.replicas_shared[sel]
    now = np.where(sliced, replica_ok, (snapshot.pods[sel] == 0) & (free == total))
    return capable, now


def _shared_now(snapshot: ClusterSnapshot, req: PlacementRequest,
                sel: npt.NDArray[np.int64] | slice, gpus: Gpus) -> _GpuNow:
    """nvidia.com/gpu.shared: a replica of a GPU time-sliced under that name."""
    replicas = snapshot.replicas[sel]
    replica_ok = _replica_ok(snapshot, sel, replicas > 0, replicas,
                             total=snapshot.total_mib[sel], free=snapshot.free_mib[sel])
    return gpus.not_mig & (replicas > 1) & snapshot.replicas_shared[sel], replica_ok


def _fraction_now(snapshot: ClusterSnapshot, req: PlacementRequest,
                  sel: npt.NDArray[np.int64] | slice, gpus: Gpus) -> _GpuNow:
    total = snapshot.total_mib[sel]
    free = snapshot.free_mib[sel]
    # free >= total * milli // 1000  <=>  (free + 1) * 1000 > total * milli (integers; int64:
    # no overflow)
    now = (free.astype(np.int64) + 1) * 1000 > total.astype(np.int64) * req.request.milli
    return gpus.not_mig & (total > 0), now


def _vram_now(snapshot: ClusterSnapshot, req: PlacementRequest,
              sel: npt.NDArray[np.int64] | slice, gpus: Gpus) -> _GpuNow:
    vram = req.request.vram_mib
    return gpus.not_mig & (snapshot.total_mib[sel] >= vram), snapshot.free_mib[sel] >= vram


_GPU_NOW = {RequestKind.WHOLE: _whole_now, RequestKind.SHARED: _shared_now,
            RequestKind.FRACTION: _fraction_now, RequestKind.VRAM: _vram_now}


def gpu_units(snapshot: ClusterSnapshot, req: PlacementRequest,
           sel: npt.NDArray[np.int64] | slice, gpus: Gpus) -> Units:
    if req.kind is RequestKind.MIG:
        return _mig_units(snapshot, req, sel, gpus)
    capable, now = _GPU_NOW[req.kind](snapshot, req, sel, gpus)
    fits_now = gpus.usable & capable & now
    return Units(capable=capable, units=fits_now.astype(np.int16),
                  available=row_count(fits_now))
