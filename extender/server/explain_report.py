"""The parts of ``/debug/explain`` that are not per node: a bound pod's placement, and a
pending pod's reasons grouped by node class.

A node's class is its GPU types and its state (``idle``: no pod on its GPUs, ``in use``,
``no GPU``, ``not in inventory``): a pending pod on a 2,000-node fleet has a handful of
(class, reason) groups, each with a count and a few example nodes, where the per-node list
(``nodes``, kept for machines) has 2,000 lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.reasons import Reason
from extender.inventory.snapshot import ClusterSnapshot
from extender.scheduling.explain import assignment_json
from extender.scheduling.scheduler import BoundPlacement

EXAMPLES = 3
"""Example nodes listed per group."""


def bound_report(bound: BoundPlacement) -> dict[str, Any]:
    assignment = bound.assignment
    return {
        "node": bound.node,
        "source": bound.source,
        "assignment": assignment_json(assignment) if assignment is not None else None,
        "breakdown": bound.breakdown.to_json() if bound.breakdown is not None else None,
        "breakdownMissing": None if bound.breakdown is not None else (
            "the breakdown is recorded when this process binds the pod; this one was bound "
            "before it started, by another replica, or by another scheduler"),
    }


def node_class(snapshot: ClusterSnapshot, name: str) -> tuple[str, str]:
    """(GPU types joined by '+', state) of one node."""
    row = snapshot.node_index.get(name)
    if row is None:
        return "", "not in inventory"
    types = snapshot.gpu_type[row]
    present = types >= 0
    if not present.any():
        return "", "no GPU"
    ids = sorted({snapshot.catalog.id_of(int(t)) for t in types[present].tolist()})
    busy = bool((snapshot.pods[row][present] > 0).any())
    return "+".join(ids), "in use" if busy else "idle"


def reason_groups(snapshot: ClusterSnapshot, names: Sequence[str], verdicts: Sequence[str],
                  codes: npt.NDArray[np.int8], messages: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per (node class, verdict, reason code), most nodes first; ``reason`` is the
    message of the group's first node (others differ only in their numbers)."""
    groups: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for name, verdict, code, message in zip(names, verdicts, codes.tolist(), messages,
                                            strict=True):
        gpu_type, state = node_class(snapshot, name)
        key = (gpu_type, state, verdict, code)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "gpuType": gpu_type or None, "state": state, "verdict": verdict,
                "code": Reason(code).name.lower(), "reason": message or None,
                "count": 0, "examples": []}
        group["count"] += 1
        if len(group["examples"]) < EXAMPLES:
            group["examples"].append(name)
    return sorted(groups.values(), key=lambda g: (-g["count"], g["verdict"], g["code"],
                                                  g["gpuType"] or "", g["state"]))
