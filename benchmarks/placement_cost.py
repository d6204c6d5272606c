"""Placement benchmark, issue 11: the bill of occupied nodes, the cost setting, the limit.

Runs FGD and the default strategy with ``weights.idlePrice`` 0 and 1, and with
``elasticNodes: 1``, side by side (same seeds, same arrival orders) on an openb trace, the
openb-like CI fixture or the priced fleet, and prints one markdown table: median unallocated
GPU % at 100 % arrival, the $/h of the occupied nodes at 25/50/75/100 % arrival (and its
ratio to FGD's), and the offline bound (``extender.simulator.bound``) for the trace.

    nice .venv/bin/python benchmarks/placement_cost.py --trace default --seeds 42-51
    nice .venv/bin/python benchmarks/placement_cost.py --trace fixture --seeds 42-44
    nice .venv/bin/python benchmarks/placement_cost.py --fleet \\
        ../shared/data/alibaba_spot_gpu_v2026/node_info_df.csv --seeds 42-44
    nice -n 19 .venv/bin/python benchmarks/placement_cost.py --fleet \\
        ../shared/data/alibaba_spot_gpu_v2026/node_info_df.csv --seeds 42-44 --no-bound \\
        --variants ';idlePrice=0;elasticNodes=1' --also cheapest-first --rows /tmp/fleet.jsonl

``--rows`` makes it resumable (one JSON line per finished replay) and adds, per setting, the
occupied bill over the $/h of the GPUs the pods hold (the floor no placement rule goes under).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor, as_completed  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extender.simulator.bound import offline_bound  # noqa: E402
from extender.simulator.fleet import LOCAL_TYPES, FleetOptions, fleet_scenario  # noqa: E402
from extender.simulator.openb import platform_for_models  # noqa: E402
from extender.simulator.replay import Replay, ReplayOptions, ReplayResult  # noqa: E402
from extender.simulator.result import BILL_PCTS, occupied_cost_at  # noqa: E402
from extender.simulator.scenario import Scenario, openb_scenario  # noqa: E402
from extender.simulator.trace import load_trace  # noqa: E402

OPENB = ROOT.parent / "shared" / "data" / "openb"
FIXTURE = ROOT / "tests" / "data" / "openb_like"
VARIANTS: tuple[tuple[str, dict[str, float] | None], ...] = (
    ("fgd", None),
    ("cost-fragmentation", {"idlePrice": 0.0}),
    ("cost-fragmentation", {"idlePrice": 1.0}),
    ("cost-fragmentation", {"idlePrice": 1.0, "elasticNodes": 1.0}),
)


def scenario_for(trace: str, fleet: str | None, seed: int,
                 weights: dict[str, float] | None) -> Scenario:
    if fleet:
        scenario = fleet_scenario(fleet, FleetOptions(seed=seed))
        models: tuple[str, ...] = ()
        extra = LOCAL_TYPES
    else:
        if trace == "fixture":
            nodes, pods = FIXTURE / "nodes.csv", FIXTURE / "pods.csv"
        else:
            nodes = OPENB / "openb_node_list_gpu_node.csv"
            pods = OPENB / f"openb_pod_list_{trace}.csv"
        loaded = load_trace(nodes, pods)
        scenario = openb_scenario(loaded)
        models = tuple({n.model for n in loaded.nodes if n.gpus} |
                       {m for p in loaded.pods for m in p.gpu_spec})
        extra = ()
    if weights is None:
        return scenario
    platform = platform_for_models(models, extra=extra, strategy="cost-fragmentation",
                                   weights=weights)
    assert [t.id for t in platform.catalog.types] == \
        [t.id for t in scenario.platform.catalog.types]
    return dataclasses.replace(scenario, platform=platform)


def run(task: tuple[str, str | None, int, str, dict[str, float] | None]
        ) -> dict[str, object]:
    trace, fleet, seed, policy, weights = task
    scenario = scenario_for(trace, fleet, seed, weights)
    result = Replay(scenario, ReplayOptions(policy=policy, seed=seed)).run()
    return {"key": task_key(task), "variant": label_of(policy, weights),
            "seed": seed, "unallocated": result.unallocated_at(100),
            "bill": [occupied_cost_at(result, k) for k in BILL_PCTS],
            "held": [held_cost_at(result, k) for k in BILL_PCTS],
            "failed": result.failed, "seconds": result.wall_seconds}


def held_cost_at(result: ReplayResult, arrived_pct: int) -> float | None:
    """$/h of the GPU-equivalents held by pods at an arrived % (the floor of the occupied
    nodes' bill: a node's $/h is at least that of the GPUs held on it)."""
    for point in result.curve:
        if point.arrived_pct == arrived_pct:
            return point.cost_per_hour
    return None


def label_of(policy: str, weights: dict[str, float] | None) -> str:
    if weights is None:
        return policy
    if not weights:
        return f"{policy} (its defaults)"
    return f"{policy} " + ", ".join(f"{k}={v:g}" for k, v in weights.items())


def task_key(task: tuple[str, str | None, int, str, dict[str, float] | None]) -> str:
    trace, fleet, seed, policy, weights = task
    return f"{Path(fleet).name if fleet else trace}|{seed}|{label_of(policy, weights)}"


def load_rows(path: Path | None) -> dict[str, dict[str, object]]:
    """Rows of an earlier run of the same command (``--rows``), by ``task_key``."""
    if path is None or not path.exists():
        return {}
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {str(r["key"]): r for r in rows}


def bound_of(task: tuple[str, str | None, int]) -> float:
    trace, fleet, seed = task
    return offline_bound(scenario_for(trace, fleet, seed, None), seed=seed).unallocated_pct


def over_held(group: list[dict[str, object]], i: int) -> float:
    """Median over seeds of the occupied bill over the held GPUs' $/h at ``BILL_PCTS[i]``
    (nan for rows written before ``held`` was recorded)."""
    ratios = []
    for row in group:
        bill, held = row.get("bill"), row.get("held")
        if not isinstance(bill, list) or not isinstance(held, list) or not held[i]:
            return float("nan")
        ratios.append(float(bill[i]) / float(held[i]))
    return statistics.median(ratios)


def seeds_of(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="default",
                        help="openb pod-list name (default, gpuspec25...) or 'fixture'")
    parser.add_argument("--fleet", help="the priced fleet's node list instead of a trace")
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-bound", action="store_true")
    parser.add_argument("--variants", help="';'-separated weight sets of the default, e.g. "
                        "'idlePrice=0;idlePrice=1,openingCost=0.1' (FGD always runs; an "
                        "empty set is the default's own weights); default: the four of issue 11")
    parser.add_argument("--also", default="", help="','-separated other policies to run "
                        "under their own defaults beside the variants (e.g. cheapest-first)")
    parser.add_argument("--rows", type=Path, help="JSON-lines file: every replay is appended "
                        "when it ends, rows already there are not rerun (resumable), and the "
                        "table is made from all of them")
    args = parser.parse_args()
    seeds = seeds_of(args.seeds)
    variants = VARIANTS if not args.variants else (("fgd", None), *(
        ("cost-fragmentation", {k.strip(): float(v) for k, _, v in
                                (p.partition("=") for p in part.split(",") if p.strip())})
        for part in args.variants.split(";")))
    variants = (*variants, *((name.strip(), None) for name in args.also.split(",") if name.strip()))
    tasks = [(args.trace, args.fleet, s, p, w) for s in seeds for p, w in variants]
    started = time.perf_counter()
    done = load_rows(args.rows)
    rows = [done[key] for key in (task_key(t) for t in tasks) if key in done]
    todo = [t for t in tasks if task_key(t) not in done]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run, t) for t in todo]
        for future in as_completed(futures):
            row = future.result()
            rows.append(row)
            if args.rows:
                with args.rows.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row) + "\n")
        bounds = [] if args.no_bound or args.fleet else \
            list(pool.map(bound_of, [(args.trace, None, s) for s in seeds]))
    rows.sort(key=lambda r: (str(r["variant"]) != "fgd", str(r["variant"]), int(r["seed"])))  # type: ignore[call-overload]
    by_variant: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_variant.setdefault(str(row["variant"]), []).append(row)
    fgd_bill = [statistics.median(float(r["bill"][i]) for r in by_variant["fgd"])  # type: ignore[index]
                for i in range(len(BILL_PCTS))]
    name = f"fleet {Path(args.fleet).name}" if args.fleet else f"trace {args.trace}"
    print(f"\n{name}, seeds {args.seeds}: medians over seeds\n")
    print("| policy | unallocated % @100 | seeds won vs FGD | occupied $/h @ "
          + " / ".join(f"{k} %" for k in BILL_PCTS) + " | ratio to FGD | occupied over held "
          "GPUs' $/h | s / replay |")
    print("|---|---:|---:|---|---|---|---:|")
    fgd_un = {int(r["seed"]): float(r["unallocated"]) for r in by_variant["fgd"]}  # type: ignore[arg-type]
    for variant, group in by_variant.items():
        un = statistics.median(float(r["unallocated"]) for r in group)  # type: ignore[arg-type]
        won = sum(float(r["unallocated"]) < fgd_un[int(r["seed"])] for r in group)  # type: ignore[arg-type]
        bill = [statistics.median(float(r["bill"][i]) for r in group)  # type: ignore[index]
                for i in range(len(BILL_PCTS))]
        ratio = [b / f if f else float("nan") for b, f in zip(bill, fgd_bill, strict=True)]
        over = [over_held(group, i) for i in range(len(BILL_PCTS))]
        secs = statistics.median(float(r["seconds"]) for r in group)  # type: ignore[arg-type]
        print(f"| {variant} | {un:.2f} | {won}/{len(group)} | "
              + " / ".join(f"{b:,.0f}" for b in bill) + " | "
              + " / ".join(f"{r:.3f}" for r in ratio) + " | "
              + " / ".join(f"{r:.3f}" for r in over) + f" | {secs:.1f} |")
    if bounds:
        print(f"| offline bound (MILP, HiGHS) | {statistics.median(bounds):.2f} | | | | |")
    print(f"\n{len(rows)} replays in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
