"""What the inventory holds, as JSON for people: every node, GPU and holding (the schema is
docs/debug-inventory.md). One function shared by ``GET /debug/inventory`` and ``gpu-extender
inspect`` (which reads a cluster or a file, without a running extender)."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from extender.inventory.mig_profiles import mig_profiles
from extender.inventory.snapshot import DYNAMIC_MIG, NOT_MIG
from extender.inventory.store import Holding, Inventory


def inventory_report(inventory: Inventory, only_node: str | None = None) -> dict[str, Any]:
    snapshot = inventory.snapshot()
    catalog = snapshot.catalog
    by_node: dict[str, list[Holding]] = defaultdict(list)
    for holding in inventory.holdings():
        by_node[holding.node].append(holding)
    now = time.monotonic()
    mig_held: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for holding in inventory.holdings():
        for grant in holding.assignment.grants if holding.assignment else ():
            if grant.mig_profile is not None:
                mig_held[(holding.node, grant.index)][grant.mig_profile] += 1
    nodes = []
    valid = snapshot.node_valid.tolist()
    for row, name in enumerate(snapshot.node_names):
        if not valid[row] or (only_node is not None and name != only_node):
            continue
        info = snapshot.nodes.get(name)
        dra_names = {g.index: g.dra_device for g in info.gpus} if info and info.dra else {}
        gpus = []
        for slot in range(snapshot.n_gpus):
            type_index = int(snapshot.gpu_type[row, slot])
            if type_index < 0:
                continue
            layout = int(snapshot.mig_layout[row, slot])
            gpus.append({
                "index": int(snapshot.gpu_index[row, slot]),
                "type": catalog.id_of(type_index),
                "totalMiB": int(snapshot.total_mib[row, slot]),
                "freeMiB": int(snapshot.free_mib[row, slot]),
                "replicas": int(snapshot.replicas[row, slot]),
                "replicasFree": int(snapshot.replicas_free[row, slot]),
                "mig": None if layout == NOT_MIG else {
                    "layout": "dynamic" if layout == DYNAMIC_MIG else "static",
                    "usedSlots": f"{int(snapshot.mig_used[row, slot]):08b}",
                    "profiles": mig_profiles(snapshot, row, slot, mig_held.get(
                        (name, int(snapshot.gpu_index[row, slot])), {}))},
                "pods": int(snapshot.pods[row, slot]),
                "healthy": bool(snapshot.healthy[row, slot]),
                **({"draDevice": dra_names.get(int(snapshot.gpu_index[row, slot]), "")}
                   if dra_names else {}),
            })
        nodes.append({
            "name": name,
            "version": int(snapshot.node_version[row]),
            "cpuFreeMilli": int(snapshot.cpu_free[row]),
            "memoryFreeMiB": int(snapshot.memory_free[row]),
            "problems": list(info.problems) if info else [],
            "gpus": gpus,
            "holdings": [_holding_report(h, now) for h in by_node.get(name, [])],
            **({"draDevices": [{"name": d.name, "gpu": d.gpu_index, "type": d.kind,
                                "memoryMiB": d.memory_mib, "uuid": d.uuid,
                                "profile": d.profile} for d in info.dra_devices]}
               if info and info.dra else {}),
        })
    known = set(snapshot.node_index)
    orphans = [_holding_report(h, now) for node, held in by_node.items()
               if node not in known and only_node in (None, node) for h in held]
    return {"generation": snapshot.generation, "synced": inventory.has_synced(),
            "nodes": nodes, "holdingsOnUnknownNodes": orphans}


def _holding_report(holding: Holding, now: float) -> dict[str, Any]:
    assignment = holding.assignment
    return {
        "pod": str(holding.key), "uid": holding.key.uid, "node": holding.node,
        "state": holding.state.value,
        "expiresInSeconds": None if holding.expires_at is None
        else round(holding.expires_at - now, 3),
        "gpus": [{"index": g.index, "vramMiB": g.vram_mib, "whole": g.whole,
                  "replica": g.replica, "mig": g.mig_profile, "migStart": g.mig_start}
                 for g in assignment.grants] if assignment else [],
        "cpuMilli": holding.cpu_milli, "memoryMiB": holding.memory_mib,
    }
