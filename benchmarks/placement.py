"""Placement benchmark: policies x seeds x traces through ``extender.simulator``.

Usage (from the repository root)::

    .venv/bin/python benchmarks/placement.py                       # default trace, all policies
    .venv/bin/python benchmarks/placement.py --traces all --policies fgd,cost-fragmentation
    .venv/bin/python benchmarks/placement.py --fleet \
        ../shared/data/alibaba_spot_gpu_v2026/node_info_df.csv
    .venv/bin/python benchmarks/placement.py --report-only         # tables and plot again

Each replay appends one row to ``results.csv`` and one curve to ``curves.jsonl`` in
``--out-dir`` as soon as it finishes, so a long sweep can be interrupted and resumed (runs
already recorded are skipped). At the end it writes ``table.md`` (median unallocated GPU % at
90/95/100/110/130 % arrival, the published medians beside ours, time per replay, and our
default against FGD per trace), ``allocation.png`` (allocation vs arrival, like Figure 9a of
the FGD paper) and, with ``--fleet``, ``fleet.md``.

Replays run in ``--jobs`` worker processes (default 2). Traces are read in place from
``--trace-dir`` (default ``../shared/data/openb``); nothing is copied.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import json
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.placement_report import write_reports  # noqa: E402
from extender.core.scoring.registry import strategy_names  # noqa: E402
from extender.simulator.fleet import FleetOptions, fleet_scenario  # noqa: E402
from extender.simulator.openb import platform_for_models  # noqa: E402
from extender.simulator.replay import Replay, ReplayOptions, ReplayResult  # noqa: E402
from extender.simulator.result import BILL_PCTS, occupied_cost_at  # noqa: E402
from extender.simulator.scenario import Scenario, openb_scenario  # noqa: E402
from extender.simulator.trace import load_trace  # noqa: E402

NODE_FILE = "openb_node_list_gpu_node.csv"
POD_PREFIX = "openb_pod_list_"
PAPER_POLICIES = ("random", "dot-product", "gpu-clustering", "gpu-packing", "best-fit", "fgd")
DEFAULT_POLICIES = (*PAPER_POLICIES, "least-allocated", "most-allocated", "cost-fragmentation")
SEEDS = tuple(range(42, 52))
RESULT_FIELDS = ("trace", "policy", "seed", "inflate", "tie_break", "wall_seconds", "pods",
                 "placed", "failed", "allocated_gpus", "cost_per_hour", "untyped_on_protected",
                 *(f"unalloc_{k}" for k in (50, 80, 90, 95, 100, 105, 110, 120, 130)),
                 *(f"bill_{k}" for k in BILL_PCTS))


@dataclass(frozen=True)
class Task:
    trace: str
    """Pod-list name without the prefix (``default``), or ``spot-fleet[-unprotected]``."""
    source: str
    """The pod list path, or the fleet node list."""
    nodes: str
    policy: str
    seed: int
    inflate: float
    tie_break: str

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.trace, self.policy, str(self.seed), f"{self.inflate:g}", self.tie_break)


@functools.cache
def _scenario(trace: str, source: str, nodes: str, seed: int) -> Scenario:
    """Scenarios are cached per worker (the fleet's workload depends on the seed)."""
    if trace.startswith("spot-fleet"):
        return fleet_scenario(source, FleetOptions(seed=seed,
                                                   protect=not trace.endswith("unprotected")))
    return openb_scenario(load_trace(nodes, source), pods_source=source, nodes_source=nodes)


def split_policy(policy: str) -> tuple[str, dict[str, float]]:
    """``name@key=value,key=value`` (a strategy under other ``scoring.weights``) -> (name,
    weights); a plain name has no weights."""
    name, _, spec = policy.partition("@")
    weights = {k.strip(): float(v) for k, _, v in
               (part.partition("=") for part in spec.split(",") if part.strip())}
    return name, weights


@functools.cache
def _weighted(trace: str, source: str, nodes: str, weights: tuple[tuple[str, float], ...]
              ) -> Scenario:
    base = _scenario(trace, source, nodes, 0)
    models = {n.model for n in load_trace(nodes, source).nodes if n.gpus} | \
        {m for p in load_trace(nodes, source).pods for m in p.gpu_spec}
    platform = platform_for_models(models, weights=dict(weights))
    return dataclasses.replace(base, platform=platform)


def run_task(task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
    """One replay in a worker: (results.csv row, curves.jsonl record)."""
    seed_key = task.seed if task.trace.startswith("spot-fleet") else 0
    name, weights = split_policy(task.policy)
    scenario = _scenario(task.trace, task.source, task.nodes, seed_key) if not weights else \
        _weighted(task.trace, task.source, task.nodes, tuple(sorted(weights.items())))
    result = Replay(scenario, ReplayOptions(policy=name, seed=task.seed,
                                            inflate=task.inflate,
                                            tie_break=task.tie_break)).run()
    return result_row(task, result), curve_record(task, result)


def result_row(task: Task, result: ReplayResult) -> dict[str, Any]:
    row: dict[str, Any] = {
        "trace": task.trace, "policy": task.policy, "seed": task.seed,
        "inflate": f"{task.inflate:g}", "tie_break": task.tie_break,
        "wall_seconds": result.wall_seconds, "pods": result.pods, "placed": result.placed,
        "failed": result.failed, "allocated_gpus": result.used_gpus,
        "cost_per_hour": result.cost_per_hour,
        "untyped_on_protected": result.untyped_on_protected}
    for name in RESULT_FIELDS:
        if name.startswith("unalloc_"):
            value = result.unallocated_at(int(name.split("_")[1]))
            row[name] = "" if value is None else value
        elif name.startswith("bill_"):
            bill = occupied_cost_at(result, int(name.split("_")[1]))
            row[name] = "" if bill is None else bill
    return row


def curve_record(task: Task, result: ReplayResult) -> dict[str, Any]:
    return {"trace": task.trace, "policy": task.policy, "seed": task.seed,
            "inflate": task.inflate, "tie_break": task.tie_break,
            "arrived_pct": [p.arrived_pct for p in result.curve],
            "allocated_pct": [p.allocated_pct for p in result.curve],
            "frag_pct": [p.frag_pct for p in result.curve],
            "cost_per_hour": [p.cost_per_hour for p in result.curve]}


def done_keys(path: Path) -> set[tuple[str, str, str, str, str]]:
    if not path.exists():
        return set()
    with path.open(newline="") as handle:
        return {(r["trace"], r["policy"], r["seed"], r["inflate"], r["tie_break"])
                for r in csv.DictReader(handle)}


def append_row(path: Path, fields: Sequence[str], row: dict[str, Any]) -> None:
    """One CSV row, with the header when the file is new."""
    new = not path.exists()
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerow(row)


def append(out_dir: Path, row: dict[str, Any], curve: dict[str, Any]) -> None:
    append_row(out_dir / "results.csv", RESULT_FIELDS, row)
    with (out_dir / "curves.jsonl").open("a") as handle:
        handle.write(json.dumps(curve) + "\n")


def trace_names(trace_dir: Path, wanted: str) -> list[str]:
    present = sorted(p.stem.removeprefix(POD_PREFIX) for p in trace_dir.glob(POD_PREFIX + "*.csv"))
    if wanted == "all":
        return present
    names = [t.strip() for t in wanted.split(",") if t.strip()]
    missing = [t for t in names if t not in present]
    if missing:
        raise SystemExit(f"error: no pod list for {', '.join(missing)} in {trace_dir} "
                         f"(present: {', '.join(present) or 'none'})")
    return names


def tasks(args: argparse.Namespace, policies: Sequence[str], seeds: Sequence[int]
          ) -> list[Task]:
    out: list[Task] = []
    if args.fleet:
        for trace in ("spot-fleet", "spot-fleet-unprotected"):
            out += [Task(trace, args.fleet, "", p, s, args.inflate, args.tie_break)
                    for s in seeds for p in policies]
        return out
    trace_dir = Path(args.trace_dir)
    nodes = str(trace_dir / NODE_FILE)
    for trace in trace_names(trace_dir, args.traces):
        source = str(trace_dir / f"{POD_PREFIX}{trace}.csv")
        out += [Task(trace, source, nodes, p, s, args.inflate, args.tie_break)
                for s in seeds for p in policies]
    return out


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        seeds += list(range(int(low), int(high) + 1)) if high else [int(low)]
    return seeds


def run_all(pending: Iterable[Task], out_dir: Path, jobs: int) -> None:
    todo = list(pending)
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_task, task): task for task in todo}
        for i, future in enumerate(as_completed(futures), 1):
            task = futures[future]
            row, curve = future.result()
            append(out_dir, row, curve)
            print(f"[{i}/{len(todo)} {time.perf_counter() - started:.0f}s] {task.trace} "
                  f"{task.policy} seed {task.seed}: unallocated at 100 % "
                  f"{row['unalloc_100']} ({row['wall_seconds']} s)", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace-dir", default=str(ROOT.parent / "shared/data/openb"))
    parser.add_argument("--traces", default="default",
                        help="comma-separated pod-list names (default: default) or 'all'")
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES),
                        help="';'-separated when a policy carries weights: "
                             "'fgd;cost-fragmentation@idlePrice=0'")
    parser.add_argument("--seeds", default="42-51", help="e.g. 42-51 or 42,45")
    parser.add_argument("--inflate", type=float, default=1.3)
    parser.add_argument("--tie-break", default="order", choices=("order", "random"))
    parser.add_argument("--fleet", help="run the typed, priced fleet scenario on this node list")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks/results"))
    parser.add_argument("--expected", default=str(ROOT.parent / "shared/data/fgd_expected_results"),
                        help="the FGD authors' published results (for the tables and plot)")
    parser.add_argument("--report-only", action="store_true",
                        help="only rewrite the tables and the plot from results already there")
    args = parser.parse_args(argv)
    separator = ";" if ";" in args.policies or "@" in args.policies else ","
    policies = [p.strip() for p in args.policies.split(separator) if p.strip()]
    unknown = sorted({split_policy(p)[0] for p in policies} - set(strategy_names()))
    if unknown:
        parser.error(f"unknown policies {', '.join(unknown)}; accepted: "
                     f"{', '.join(strategy_names())}")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        done = done_keys(out_dir / "results.csv")
        pending = [t for t in tasks(args, policies, parse_seeds(args.seeds))
                   if t.key not in done]
        print(f"{len(pending)} replays to run ({len(done)} already recorded) with "
              f"{args.jobs} processes", flush=True)
        run_all(pending, out_dir, args.jobs)
    for path in write_reports(out_dir, Path(args.expected)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
