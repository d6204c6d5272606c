"""MIG instances of one GPU by profile: how many are in use and how many more could be created
now, for people (``/debug/inventory``, ``inspect``); the fit kernel has its own tables."""

from __future__ import annotations

from collections.abc import Mapping

from extender.inventory.layout import span_mask
from extender.inventory.snapshot import DYNAMIC_MIG, NOT_MIG, ClusterSnapshot


def mig_profiles(snapshot: ClusterSnapshot, row: int, slot: int,
                 used: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """``{profile: {"used": n, "free": m}}`` in catalog order (empty if not partitioned).

    ``used``: instances held per profile on this GPU (from the holdings). ``free``: instances
    of that profile alone that fit in the free slots at legal starts (the layout's own on a
    static GPU), counted greedily from slot 0, which is exact for one size at a time.
    """
    layout = int(snapshot.mig_layout[row, slot])
    if layout == NOT_MIG:
        return {}
    catalog = snapshot.catalog
    type_index = int(snapshot.gpu_type[row, slot])
    geometry = catalog.types[type_index].mig if type_index < len(catalog) else None
    if geometry is None:
        return {}
    occupied = int(snapshot.mig_used[row, slot])
    out: dict[str, dict[str, int]] = {}
    for profile in geometry.profiles:
        p = catalog.mig.index.get(profile.name)
        legal = profile.start_mask if layout == DYNAMIC_MIG or p is None \
            else int(snapshot.layouts[layout, p])
        if layout != DYNAMIC_MIG and not legal and not used.get(profile.name):
            continue  # a static layout without this profile: nothing to show
        taken, free = occupied, 0
        for start in profile.starts:
            span = span_mask(start, profile.slices)
            if legal >> start & 1 and not taken & span:
                taken |= span
                free += 1
        out[profile.name] = {"used": int(used.get(profile.name, 0)), "free": free}
    return out
