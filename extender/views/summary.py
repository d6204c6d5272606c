"""``gpu-extender inspect`` without ``-d``: one row per node, as ``kubectl get nodes`` and
``kubectl inspect gpushare`` print them: status (Ready / NotReady, SchedulingDisabled when
cordoned), GPU type, GPUs in use and free, VRAM, MIG slots, time-slice replicas, pods; ``wide``
adds free CPU and the node's problems. And the filters: ``-l`` (a label selector, as kubectl's
equality and set-less forms) and ``--type``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.errors import ExtenderError
from extender.kube import objects
from extender.kube.filters.facts import node_facts

Requirement = tuple[str, str, str]
"""(key, operator ``=``/``!=``/``exists``/``!exists``, value)."""


class SelectorError(ExtenderError):
    pass


def parse_selector(text: str) -> list[Requirement]:
    """``a=b,c!=d,e,!f`` (kubectl's equality-based form; ``==`` is ``=``)."""
    out: list[Requirement] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise SelectorError(f"-l {text!r}: empty requirement")
        if "!=" in part:
            key, value = part.split("!=", 1)
            out.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, value = part.replace("==", "=").split("=", 1)
            out.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            out.append((part[1:].strip(), "!exists", ""))
        else:
            out.append((part, "exists", ""))
        if not out[-1][0]:
            raise SelectorError(f"-l {text!r}: {part!r} has no key")
    return out


def selected(labels: Mapping[str, str], requirements: Sequence[Requirement]) -> bool:
    for key, op, value in requirements:
        have = labels.get(key)
        if (op == "=" and have != value) or (op == "!=" and have == value) or \
                (op == "exists" and have is None) or (op == "!exists" and have is not None):
            return False
    return True


def node_status(node: Mapping[str, Any]) -> str:
    """kubectl's STATUS column: Ready or NotReady (Unknown too), SchedulingDisabled if
    cordoned."""
    facts = node_facts(node)
    status = "Ready" if facts.ready else "NotReady"
    return status + (",SchedulingDisabled" if facts.unschedulable else "")


def annotate(report: dict[str, Any], nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's nodes with their ``status`` and ``labels`` from the Node objects."""
    by_name = {objects.name(n): n for n in nodes}
    for node in report.get("nodes") or []:
        source = by_name.get(str(node["name"]))
        if source is not None:
            node["status"] = node_status(source)
            node["labels"] = dict(objects.labels(source))
    return report


def keep_nodes(report: dict[str, Any], *, requirements: Sequence[Requirement] = (),
               types: frozenset[str] | None = None) -> dict[str, Any]:
    nodes = []
    for node in report.get("nodes") or []:
        if requirements and not selected(node.get("labels") or {}, requirements):
            continue
        if types is not None and not types & {str(g["type"]) for g in node.get("gpus") or []}:
            continue
        nodes.append(node)
    return {**report, "nodes": nodes}


HEADER = ("NODE", "STATUS", "TYPE", "GPUS", "FREE", "VRAM GiB", "MIG", "SLICES", "PODS")
"""GPUS: GPUs in use (any pod on them), FREE: GPUs with none; VRAM GiB used/total; MIG:
slots used/total; SLICES: time-slice replicas used/total; PODS: pods holding GPUs."""


def render_summary(report: dict[str, Any], *, wide: bool = False) -> str:
    rows = [list(HEADER) + (["CPU FREE", "PROBLEMS"] if wide else [])]
    for node in sorted(report.get("nodes") or [], key=lambda n: str(n["name"])):
        rows.append(_row(node, wide))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    if not report.get("synced", True):
        lines.insert(0, "warning: the inventory is not synced yet; what follows may be partial")
    return "\n".join(lines)


def _row(node: Mapping[str, Any], wide: bool) -> list[str]:
    gpus = node.get("gpus") or []
    types = "/".join(sorted({str(g["type"]) for g in gpus})) or "-"
    busy = sum(1 for g in gpus if int(g["pods"]) > 0)
    used = sum(int(g["totalMiB"]) - int(g["freeMiB"]) for g in gpus)
    total = sum(int(g["totalMiB"]) for g in gpus)
    migs = [g["mig"] for g in gpus if g.get("mig")]
    mig = f"{sum(8 - str(m['usedSlots']).count('0') for m in migs)}/{8 * len(migs)}" \
        if migs else "-"
    replicas = sum(int(g["replicas"]) for g in gpus)
    shared = f"{replicas - sum(int(g['replicasFree']) for g in gpus)}/{replicas}" \
        if replicas else "-"
    pods = len({h["pod"] for h in node.get("holdings") or []})
    row = [str(node["name"]), str(node.get("status") or "-"), types,
           str(busy) if gpus else "-", str(len(gpus) - busy) if gpus else "-",
           f"{used / 1024:.1f}/{total / 1024:.1f}" if gpus else "-", mig, shared, str(pods)]
    if wide:
        row += [f"{int(node.get('cpuFreeMilli', 0))}m", str(len(node.get("problems") or []))]
    return row
