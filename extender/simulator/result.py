"""A replay's result as JSON (the ``--output`` file) and as a short human summary.

JSON schema (``SCHEMA_VERSION`` 1)::

    {
      "schema": 1,
      "policy": str, "seed": int, "trace": str, "inflate": float,
      "cluster": {"nodes": int, "gpus": int},
      "pods": {"arrived": int, "placed": int, "failed": int, "failed_gpu_milli": int,
               "failures_by_request": {request: count}},
      "unallocated_pct_at_100": float | null,
      "unallocated_pct": {"90": float, "95": ..., "100": ..., "110": ..., "130": ...},
      "allocated_gpus": float, "cost_per_hour": float,
      "placed_by_label": {label: {"pods": n, <gpu type>: GPU-equivalents}},
      "untyped_on_protected": int,   (pods naming no type placed on a protected type)
      "occupied_cost_per_hour": {"25": float, "50": ..., "75": ..., "100": ...},
                                     ($/h of the nodes holding a pod, at arrived %)
      "curve": [{"arrived_pct": int, "allocated_pct": float, "unallocated_pct": float,
                 "frag_pct": float, "cost_per_hour": float,
                 "occupied_cost_per_hour": float}, ...],
      "wall_seconds": float
    }
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from extender.simulator.replay import ReplayResult

SCHEMA_VERSION = 1
REPORTED_PCTS = (90, 95, 100, 110, 130)
BILL_PCTS = (25, 50, 75, 100)
"""Arrived % at which the occupied-node bill is reported (issue 11)."""


def occupied_cost_at(result: ReplayResult, arrived_pct: int) -> float | None:
    """$/h of the occupied nodes at an arrived % of the curve (``None``: no such point)."""
    for point in result.curve:
        if point.arrived_pct == arrived_pct:
            return point.occupied_cost_per_hour
    return None


def to_json(result: ReplayResult) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "policy": result.policy,
        "seed": result.seed,
        "trace": result.scenario,
        "inflate": result.inflate,
        "cluster": {"nodes": result.nodes, "gpus": result.gpus},
        "pods": {"arrived": result.pods, "placed": result.placed, "failed": result.failed,
                 "failed_gpu_milli": result.failed_milli,
                 "failures_by_request": result.failures_by_kind},
        "unallocated_pct_at_100": result.unallocated_at(100),
        "unallocated_pct": {str(k): result.unallocated_at(k) for k in REPORTED_PCTS},
        "allocated_gpus": result.used_gpus,
        "cost_per_hour": result.cost_per_hour,
        "occupied_cost_per_hour": {str(k): occupied_cost_at(result, k) for k in BILL_PCTS},
        "placed_by_label": result.placed_by_label,
        "untyped_on_protected": result.untyped_on_protected,
        "curve": [{"arrived_pct": p.arrived_pct, "allocated_pct": p.allocated_pct,
                   "unallocated_pct": round(p.unallocated_pct, 4), "frag_pct": p.frag_pct,
                   "cost_per_hour": p.cost_per_hour,
                   "occupied_cost_per_hour": p.occupied_cost_per_hour} for p in result.curve],
        "wall_seconds": result.wall_seconds,
    }


def write_json(result: ReplayResult, path: str | Path) -> None:
    Path(path).write_text(json.dumps(to_json(result), indent=1) + "\n", encoding="utf-8")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} %"


def summary(result: ReplayResult) -> str:
    """A few lines for a terminal."""
    rows = ", ".join(f"{k} %: {_pct(result.unallocated_at(k))}" for k in REPORTED_PCTS)
    return "\n".join([
        f"{result.scenario}: policy {result.policy}, seed {result.seed}, inflate "
        f"{result.inflate:g}; {result.nodes} nodes, {result.gpus} GPUs",
        f"  pods: {result.pods} arrived, {result.placed} placed, {result.failed} failed "
        f"({result.failed_milli / 1000:g} GPUs of demand)",
        f"  unallocated GPUs at arrived demand {rows}",
        f"  allocated {result.used_gpus:.1f} GPUs costing {result.cost_per_hour:.2f} $/h; "
        f"replay took {result.wall_seconds:.1f} s",
        "  occupied nodes cost " + ", ".join(
            f"{k} %: " + ("n/a" if (c := occupied_cost_at(result, k)) is None else f"{c:.2f}")
            for k in BILL_PCTS) + " $/h at arrived demand",
    ])
