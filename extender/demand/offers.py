"""What packing needs from the platform: the GPU types an autoscaler can provide (``Offer``), as
big as nodes of that type really are, and each waiting pod's ``Need`` (the types it may use
after protection, the same rule the core applies)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from extender.config.demand import DemandConfig
from extender.demand.pack import Need, Offer
from extender.model import NodeInfo, PodInfo
from extender.platform import Platform


def offered_types(platform: Platform, config: DemandConfig) -> frozenset[int]:
    """Catalog indices of ``demand.types`` (every known type when unset: a pod's own
    acceptance and protection then decide, ``need_of``)."""
    catalog = platform.catalog
    if config.types is None:
        return frozenset(range(len(catalog)))
    out: set[int] = set()
    for name in config.types:
        out |= catalog.resolve(name) or set()
    return frozenset(out)


def reported_vram(nodes: Mapping[str, NodeInfo]) -> dict[int, int]:
    """Catalog index -> the smallest VRAM (MiB) a GPU of that type reports on a known node
    (GFD's ``nvidia.com/gpu.memory``; a T4 reports 15360, not the nominal 16384)."""
    seen: dict[int, int] = {}
    for node in nodes.values():
        for gpu in node.gpus:
            if gpu.type_index >= 0 and gpu.memory_mib > 0:
                seen[gpu.type_index] = min(seen.get(gpu.type_index, gpu.memory_mib),
                                           gpu.memory_mib)
    return seen


def offers(platform: Platform, config: DemandConfig,
           nodes: Mapping[str, NodeInfo]) -> dict[int, Offer]:
    """Catalog index -> what one new node of that type holds."""
    vram = reported_vram(nodes)
    out: dict[int, Offer] = {}
    for index in sorted(offered_types(platform, config)):
        accel = platform.catalog.types[index]
        mig = {p.name: accel.mig.slots // p.slices for p in accel.mig.profiles
               if p.slices > 0} if accel.mig else {}
        out[index] = Offer(accel.id, vram.get(index, accel.memory_mib), accel.price,
                           config.gpus_for(accel.id), mig)
    return out


def need_of(platform: Platform, info: PodInfo, offered: Mapping[int, Offer],
            nodes: Mapping[str, NodeInfo]) -> Need | None:
    """The pod's need on the offered types it may use (``None``: it asks no GPU). Untyped
    pods get no protected type (per-namespace allowances apply), typed pods only theirs."""
    request = info.request
    if request is None:
        return None
    placement = platform.placement_request(request, namespace=info.key.namespace,
                                           nodes=nodes)
    allowed = {int(i) for i in np.flatnonzero(placement.allowed)}
    request = placement.request
    return Need(str(info.key), request.kind,
                frozenset(offered[i].type_id for i in allowed if i in offered),
                count=request.count, vram_mib=request.vram_mib, milli=request.milli,
                mig_profile=request.mig_profile)
