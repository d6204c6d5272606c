"""``gpu-extender inspect``: the inventory as a per-node, per-GPU table (like ``kubectl inspect
gpushare``), from a running extender's ``/debug/inventory``, from the API, or from a dump.

Every source ends as the ``/debug/inventory`` document (docs/debug-inventory.md), so the table
and ``-o json`` are the same whichever way the data came.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from typing import Any

WIDTH = 100
_HEADER = f"  {'GPU':>3}  {'TYPE':<12} {'MEMORY USED/TOTAL':<19} {'REPLICAS':<8} " \
          f"{'MIG':<14} {'HEALTH':<7} PODS"
_PODS_AT = len(_HEADER) - len("PODS")


def render_inventory(report: dict[str, Any]) -> str:
    """Nodes by name, GPUs by index, pods by name; at most ``WIDTH`` columns."""
    lines: list[str] = []
    if not report.get("synced", True):
        lines.append("warning: the inventory is not synced yet; what follows may be partial")
    for node in sorted(report.get("nodes") or [], key=lambda n: str(n["name"])):
        lines += _node_lines(node)
        lines.append("")
    orphans = report.get("holdingsOnUnknownNodes") or []
    if orphans:
        lines.append(f"pods held on nodes the inventory does not know: {len(orphans)}")
        for holding in sorted(orphans, key=lambda h: (h["node"], h["pod"])):
            lines.append(_cut(f"  {holding['pod']} on {holding['node']}", WIDTH))
        lines.append("")
    lines += _totals(report.get("nodes") or [])
    return "\n".join(lines)


def _node_lines(node: dict[str, Any]) -> list[str]:
    gpus = sorted(node.get("gpus") or [], key=lambda g: int(g["index"]))
    types = sorted({str(g["type"]) for g in gpus})
    used = sum(int(g["totalMiB"]) - int(g["freeMiB"]) for g in gpus)
    total = sum(int(g["totalMiB"]) for g in gpus)
    title = f"NODE {node['name']}  {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}"
    if types:
        title += f" {'/'.join(types)}  VRAM {_gib(used)}/{_gib(total)} GiB used"
    title += f"  cpu free {int(node.get('cpuFreeMilli', 0))}m"
    dra = node.get("draDevices") or []
    if dra:
        title += "  DRA"
    lines = [_cut(title, WIDTH)]
    for problem in node.get("problems") or []:
        lines += textwrap.wrap(str(problem), WIDTH, initial_indent="  problem: ",
                               subsequent_indent="    ")
    if not gpus:
        lines.append("  (no GPUs)")
        return lines
    pods_on: dict[int, list[str]] = defaultdict(list)
    for holding in node.get("holdings") or []:
        for index in sorted({int(g["index"]) for g in holding.get("gpus") or []}):
            suffix = "" if holding.get("state") == "observed" else f" ({holding['state']})"
            pods_on[index].append(str(holding["pod"]) + suffix)
    lines.append(_HEADER)
    for gpu in gpus:
        index = int(gpu["index"])
        memory = f"{_gib(int(gpu['totalMiB']) - int(gpu['freeMiB']))}/" \
                 f"{_gib(int(gpu['totalMiB']))} GiB"
        replicas = f"{int(gpu['replicas']) - int(gpu['replicasFree'])}/{gpu['replicas']}" \
            if int(gpu["replicas"]) else "-"
        mig = gpu.get("mig")
        mig_text = "-" if not mig else f"{8 - str(mig['usedSlots']).count('0')}/8 slots"
        health = "ok" if gpu.get("healthy", True) else "UNHEALTHY"
        row = f"  {index:>3}  {_cut(str(gpu['type']), 12):<12} {memory:<19} {replicas:<8} " \
              f"{mig_text:<14} {health:<7} "
        pods = sorted(pods_on.get(index, [])) or ["-"]
        lines += textwrap.wrap(", ".join(pods), WIDTH, initial_indent=row,
                               subsequent_indent=" " * _PODS_AT, break_on_hyphens=False)
        if mig and mig.get("profiles"):
            text = "  ".join(f"{name} {p['used']} used/{p['free']} free"
                             for name, p in mig["profiles"].items())
            lead = f"       mig {mig['layout']}: "
            lines += textwrap.wrap(text, WIDTH, initial_indent=lead,
                                   subsequent_indent=" " * len(lead))
    lines += _dra_lines(dra)
    return lines


def _dra_lines(devices: list[dict[str, Any]]) -> list[str]:
    """A DRA-managed node's devices: which GPU each is (part of), and its UUID."""
    if not devices:
        return []
    text = "  ".join(f"{d['name']}=GPU{d['gpu']}" + (f"({d['profile']})" if d.get("profile")
                                                      else "") for d in devices)
    lead = "  DRA devices (gpu.nvidia.com; claims hold them): "
    return textwrap.wrap(text, WIDTH, initial_indent=lead, subsequent_indent=" " * 6,
                         break_on_hyphens=False)


def _totals(nodes: list[dict[str, Any]]) -> list[str]:
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for node in nodes:
        for gpu in node.get("gpus") or []:
            entry = by_type[str(gpu["type"])]
            entry[0] += 1
            entry[1] += int(gpu["pods"]) > 0
            entry[2] += int(gpu["totalMiB"]) - int(gpu["freeMiB"])
            entry[3] += int(gpu["totalMiB"])
    lines = [f"{'TYPE':<14} {'GPUS':>5} {'IN USE':>7} {'VRAM USED/TOTAL GiB':>22}"]
    for name, (count, busy, used, total) in sorted(by_type.items()):
        lines.append(f"{name:<14} {count:>5} {busy:>7} {_gib(used) + '/' + _gib(total):>22}")
    lines.append(f"{len(nodes)} nodes")
    return lines


def _gib(mib: int) -> str:
    return f"{mib / 1024:.1f}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
