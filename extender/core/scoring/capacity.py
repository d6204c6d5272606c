"""How much of each GPU is in use and how much a request would take, in GPU-equivalents.

Shared by the allocation-style scorers. Shapes ``(n, n_gpus)`` float64.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.fit import mig_starts
from extender.core.request import PlacementRequest
from extender.inventory.layout import POPCOUNT
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import RequestKind


def used_fraction(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                  ) -> npt.NDArray[np.float64]:
    """Fraction of each GPU held by pods: VRAM for plain GPUs, replicas for time-sliced ones,
    slots for MIG-partitioned ones; 0 on padding."""
    present = snapshot.gpu_type[rows] >= 0
    total = np.maximum(snapshot.total_mib[rows], 1).astype(np.float64)
    vram = 1.0 - np.clip(snapshot.free_mib[rows], 0, None) / total
    replicas = snapshot.replicas[rows].astype(np.float64)
    sliced = 1.0 - snapshot.replicas_free[rows] / np.maximum(replicas, 1.0)
    catalog = snapshot.catalog
    type_col = np.where(present, snapshot.gpu_type[rows], catalog.unknown_index)
    slots = np.maximum(catalog.mig_slots[type_col], 1).astype(np.float64)
    phantom = 8 - catalog.mig_slots[type_col]
    mig = (POPCOUNT[snapshot.mig_used[rows]] - phantom) / slots
    layout = snapshot.mig_layout[rows]
    used = np.where(layout >= 0, mig, np.where(replicas > 0, np.maximum(sliced, vram), vram))
    return np.where(present, used, 0.0)


def request_fraction(snapshot: ClusterSnapshot, req: PlacementRequest,
                     rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Fraction of each GPU one unit of ``req`` would take there."""
    total = np.maximum(snapshot.total_mib[rows], 1).astype(np.float64)
    replicas = snapshot.replicas[rows].astype(np.float64)
    kind = req.kind
    if kind is RequestKind.VRAM:
        return req.request.vram_mib / total
    if kind is RequestKind.FRACTION:
        return np.full(total.shape, req.request.milli / 1000.0)
    if kind is RequestKind.MIG:
        _, slices = mig_starts(snapshot, rows, snapshot.gpu_type[rows], req.mig_index)
        catalog = snapshot.catalog
        type_col = np.where(snapshot.gpu_type[rows] >= 0, snapshot.gpu_type[rows],
                            catalog.unknown_index)
        return slices / np.maximum(catalog.mig_slots[type_col], 1)
    return np.where(replicas > 0, 1.0 / np.maximum(replicas, 1.0), 1.0)


def gpu_counts(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return (snapshot.gpu_type[rows] >= 0).sum(axis=1)
