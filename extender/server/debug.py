"""Read-only endpoints for people: what the extender believes, and why a pod does (not) fit.

- ``GET /debug/inventory[?node=NAME]``: every node, GPU and holding as JSON (404 for a node
  the inventory does not know; schema in docs/debug-inventory.md);
- ``POST /debug/explain``: body is a Pod (or ExtenderArgs with ``Pod`` and ``NodeNames``):
  the verdict, reason and score on every node (or the named ones);
- ``GET /debug/explain/<namespace>/<name>``: the same for a pod the API (or the offline file)
  knows.

None of them changes state (explain does not reserve, and does not teach the workload mix).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import orjson
from flask import Flask, Response, request

from extender.apiserver.errors import KubeError, NotFound
from extender.inventory.mig_profiles import mig_profiles
from extender.inventory.snapshot import DYNAMIC_MIG, NOT_MIG
from extender.inventory.store import Holding, Inventory
from extender.server.responses import json_response
from extender.server.service import ExtenderService
from extender.server.wire import WireError


def register_debug_routes(app: Flask, service: ExtenderService) -> None:
    @app.get("/debug/inventory")
    def debug_inventory() -> Response:
        node = request.args.get("node")
        report = inventory_report(service.inventory, node)
        if node is not None and not report["nodes"] and not report["holdingsOnUnknownNodes"]:
            known = service.inventory.node_names()
            return json_response({"Error": f"node {node!r} is not in the inventory "
                                           f"({len(known)} nodes known, e.g. "
                                           f"{', '.join(known[:5]) or 'none'})"}, 404)
        return json_response(report)

    @app.post("/debug/explain")
    def debug_explain() -> Response:
        try:
            pod, names = _explain_args(request.get_data(cache=False))
        except WireError as exc:
            return json_response({"Error": str(exc)}, 400)
        return json_response(service.verbs.explain(pod, names))

    @app.get("/debug/explain/<namespace>/<name>")
    def debug_explain_known(namespace: str, name: str) -> Response:
        try:
            pod = service.find_pod(namespace, name)
        except NotFound:
            return json_response({"Error": f"pod {namespace}/{name} not found"}, 404)
        except KubeError as exc:
            return json_response({"Error": f"cannot read pod {namespace}/{name}: {exc}"}, 502)
        return json_response(service.verbs.explain(pod))


def _explain_args(body: bytes) -> tuple[dict[str, Any], list[str] | None]:
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError as exc:
        raise WireError("body", f"not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise WireError("body", "expected a Pod object or {\"Pod\": ..., \"NodeNames\": [...]}")
    if "Pod" not in doc:
        return doc, None
    pod, names = doc["Pod"], doc.get("NodeNames")
    if not isinstance(pod, dict):
        raise WireError("Pod", "must be a Pod object")
    if names is not None and (not isinstance(names, list)
                              or not all(isinstance(n, str) for n in names)):
        raise WireError("NodeNames", "must be a list of node names")
    return pod, names


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
