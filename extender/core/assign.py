"""Which GPU(s) on the chosen node: the default (best-fit) placement.

Runs on one node (<= 16 GPUs), so plain Python over the row is fine. Rules:

- whole GPUs: N distinct fully free GPUs, lowest indices first; on time-sliced GPUs one
  replica each, fullest GPU first (packing keeps other GPUs whole);
- time-slice replicas: N distinct GPUs, fewest free replicas first;
- VRAM share: the GPU with the least free VRAM (MiB) that still covers it (best fit);
- fraction: the GPU with the least free thousandths that still covers it (the FGD
  simulator's "least remaining milli"), then the least free MiB;
- MIG: the fullest partitioned GPU first; on it the start that keeps the most larger
  profiles placeable (packs small instances away from the slots big ones need).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.core.fit import fit, mig_starts
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero
from extender.inventory.layout import FREE_STARTS, POPCOUNT, span_mask
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, GpuGrant, RequestKind


class NoFitError(Exception):
    """The request does not fit on the node (any more)."""


def assign(snapshot: ClusterSnapshot, req: PlacementRequest, row: int, *,
           units: npt.NDArray[np.int16] | None = None,
           order: Sequence[int] | None = None) -> Assignment:
    """Choose GPUs on snapshot row ``row``; raises ``NoFitError`` if it does not fit.

    ``units``: the row's ``FitResult.units`` (``(n_gpus,)``, placements per GPU slot), when
    the caller already fitted the row on this snapshot; without it the row is fitted here
    (bind re-checks under its lock this way).
    ``order``: GPU slots in preference order, when a strategy has its own choice (FGD picks
    the GPU that minimises fragmentation); otherwise the best-fit rules above.
    """
    if units is None:
        result = fit(snapshot, req, np.array([row], dtype=np.int64))
        if not result.fits[0]:
            raise NoFitError(result.messages(snapshot)[0])
        units = result.units[0]
    slots = [int(s) for s in flat_nonzero(units > 0)]
    kind = req.kind
    if order is not None:
        rank = {s: i for i, s in enumerate(order)}
        slots.sort(key=lambda s: rank.get(s, len(rank) + s))
    elif kind is RequestKind.VRAM:
        slots.sort(key=lambda s: (int(snapshot.free_mib[row, s]), s))
    elif kind is RequestKind.FRACTION:
        slots.sort(key=lambda s: (int(snapshot.free_mib[row, s]) * 1000
                                  // max(1, int(snapshot.total_mib[row, s])),
                                  int(snapshot.free_mib[row, s]), s))
    elif kind in (RequestKind.WHOLE, RequestKind.SHARED):
        slots.sort(key=lambda s: (int(snapshot.replicas[row, s]) == 0,
                                  int(snapshot.replicas_free[row, s]), s))
    if kind is RequestKind.MIG:
        grants = _assign_mig(snapshot, req, row, slots, order is not None)
    else:
        single = kind in (RequestKind.VRAM, RequestKind.FRACTION)
        grants = [_grant(snapshot, req, row, s) for s in slots[: 1 if single else req.count]]
    node = snapshot.node_names[row]
    type_index = int(snapshot.gpu_type[row, _slot_of(snapshot, row, grants[0].index)])
    return Assignment(node=node, kind=kind, grants=tuple(grants),
                      type_id=snapshot.catalog.id_of(type_index),
                      generation=snapshot.generation)


def _slot_of(snapshot: ClusterSnapshot, row: int, index: int) -> int:
    return int(flat_nonzero(snapshot.gpu_index[row] == index)[0])


def _uuid(snapshot: ClusterSnapshot, row: int, index: int) -> str | None:
    info = snapshot.nodes.get(snapshot.node_names[row])
    if info is None:
        return None
    for gpu in info.gpus:
        if gpu.index == index:
            return gpu.uuid
    return None


def _grant(snapshot: ClusterSnapshot, req: PlacementRequest, row: int, slot: int) -> GpuGrant:
    index = int(snapshot.gpu_index[row, slot])
    total = int(snapshot.total_mib[row, slot])
    replicas = int(snapshot.replicas[row, slot])
    uuid = _uuid(snapshot, row, index)
    if req.kind is RequestKind.VRAM:
        return GpuGrant(index=index, vram_mib=req.request.vram_mib, uuid=uuid)
    if req.kind is RequestKind.FRACTION:
        return GpuGrant(index=index, vram_mib=total * req.request.milli // 1000, uuid=uuid)
    if replicas > 0:
        return GpuGrant(index=index, vram_mib=total // replicas, replica=True, uuid=uuid)
    return GpuGrant(index=index, vram_mib=total, whole=True, uuid=uuid)


def _assign_mig(snapshot: ClusterSnapshot, req: PlacementRequest, row: int,
                slots: list[int], keep_order: bool) -> list[GpuGrant]:
    catalog = snapshot.catalog
    rows = np.array([row], dtype=np.int64)
    starts, slices = mig_starts(snapshot, rows, snapshot.gpu_type[rows], req.mig_index)
    used = {s: int(snapshot.mig_used[row, s]) for s in slots}
    profile_name = catalog.mig.names[req.mig_index]
    grants: list[GpuGrant] = []
    for _ in range(req.count):
        if not keep_order:
            # fullest partitioned GPU first: fills GPUs one by one
            slots.sort(key=lambda s: (-int(POPCOUNT[used[s]]), s))
        for slot in slots:
            span = int(slices[0, slot])
            free_starts = int(starts[0, slot]) & int(FREE_STARTS[span, used[slot]])
            if not free_starts:
                continue
            type_index = int(snapshot.gpu_type[row, slot])
            start = best_mig_start(catalog, type_index, used[slot], free_starts, span)
            used[slot] |= span_mask(start, span)
            profile = catalog.mig_profile(type_index, profile_name)
            assert profile is not None
            index = int(snapshot.gpu_index[row, slot])
            grants.append(GpuGrant(index=index, vram_mib=profile.memory_mib,
                                   mig_profile=profile_name, mig_start=start, mig_slices=span,
                                   uuid=_uuid(snapshot, row, index)))
            break
        else:  # pragma: no cover - fit counted enough placements
            raise NoFitError("MIG placements ran out while assigning")
    return grants


def best_mig_start(catalog: Catalog, type_index: int, used: int, free_starts: int,
                   span: int) -> int:
    """The start whose placement keeps the most larger profiles placeable.

    Score of a resulting mask: for each profile of the type, largest first, how many
    placements stay free - compared lexicographically. Ties go to the highest start (small
    instances pack at the top, keeping low slots for 4g/7g, as HAMi does).
    """
    geometry = catalog.types[type_index].mig
    assert geometry is not None
    profiles = sorted(geometry.profiles, key=lambda p: (-p.slices, p.name))
    best: tuple[tuple[int, ...], int] | None = None
    for start in range(8):
        if not free_starts >> start & 1:
            continue
        after = used | span_mask(start, span)
        quality = tuple(int(POPCOUNT[p.start_mask & int(FREE_STARTS[p.slices, after])])
                        for p in profiles)
        candidate = (quality, start)
        if best is None or candidate > best:
            best = candidate
    assert best is not None
    return best[1]


def taken_fraction(snapshot: ClusterSnapshot, row: int, grants: Sequence[GpuGrant]) -> float:
    """GPU-equivalents a set of grants takes (whole 1, replica 1/R, VRAM v/total, MIG s/slots).
    A grant on a GPU the node does not report now (its device plugin not registered yet, the
    GPU taken out) takes nothing of the node's GPUs."""
    total = 0.0
    for grant in grants:
        found = flat_nonzero(snapshot.gpu_index[row] == grant.index)
        if not len(found):
            continue
        slot = int(found[0])
        if grant.mig_profile is not None:
            slots = int(snapshot.catalog.mig_slots[int(snapshot.gpu_type[row, slot])]) or 8
            total += grant.mig_slices / slots
        elif grant.whole:
            total += 1.0
        elif grant.replica:
            total += 1.0 / max(1, int(snapshot.replicas[row, slot]))
        else:
            total += grant.vram_mib / max(1, int(snapshot.total_mib[row, slot]))
    return total


