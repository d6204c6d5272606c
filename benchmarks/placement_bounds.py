"""The limits of placement per openb trace (issue 27): LP and IP bounds at 100 % arrival.

For each trace and seed, appends one row to ``<out-dir>/bounds.csv`` (read by
``benchmarks/placement_report.py`` for ``table.md`` and ``ratio.png``)::

    pooled_lp, pooled_ip   extender.simulator.bound: classes pool their capacity (LP, MILP)
    config_lp, config_ip   extender.simulator.config_bound: every GPU in one of the maximal
                           share configurations; its LP relaxation and its integer optimum
                           (or HiGHS's dual bound at the time limit): both valid limits

all as unallocated GPU % at 100 % arrived.

    nice .venv/bin/python benchmarks/placement_bounds.py --traces default --seeds 42
    nice .venv/bin/python benchmarks/placement_bounds.py --traces all --seeds 42 --pooled-only
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.placement import NODE_FILE, append_row, parse_seeds, trace_names  # noqa: E402
from benchmarks.placement_cost import scenario_for  # noqa: E402
from extender.simulator.bound import offline_bound  # noqa: E402
from extender.simulator.config_bound import config_bound  # noqa: E402

FIELDS = ("trace", "seed", "pods", "pooled_lp", "pooled_ip", "pooled_optimal", "config_lp",
          "config_ip", "config_optimal", "configurations", "config_seconds")


def one(task: tuple[str, int, bool, float, str]) -> dict[str, Any]:
    trace, seed, pooled_only, time_limit = task
    scenario = scenario_for(trace, None, seed, None)
    pooled = offline_bound(scenario, seed=seed, time_limit=min(60.0, time_limit))
    gpus = max(pooled.gpus, 1)
    row: dict[str, Any] = {
        "trace": trace, "seed": seed, "pods": pooled.pods,
        "pooled_lp": round(100.0 - 100.0 * pooled.lp_gpus / gpus, 4),
        "pooled_ip": pooled.unallocated_pct, "pooled_optimal": pooled.optimal}
    if not pooled_only:
        bound = config_bound(scenario, seed=seed, time_limit=time_limit)
        row.update(config_lp=bound.lp_unallocated_pct, config_ip=bound.ip_unallocated_pct,
                   config_optimal=bound.optimal, configurations=bound.configurations,
                   config_seconds=bound.seconds)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-dir", default=str(ROOT.parent / "shared/data/openb"))
    parser.add_argument("--traces", default="default")
    parser.add_argument("--seeds", default="42")
    parser.add_argument("--pooled-only", action="store_true")
    parser.add_argument("--time-limit", type=float, default=300.0,
                        help="seconds for the configuration IP (then its dual bound)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks/results"))
    args = parser.parse_args()
    trace_dir = Path(args.trace_dir)
    assert (trace_dir / NODE_FILE).exists(), trace_dir
    traces = ["fixture"] if args.traces == "fixture" else trace_names(trace_dir, args.traces)
    tasks = [(t, s, args.pooled_only, args.time_limit)
             for t in traces for s in parse_seeds(args.seeds)]
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "bounds.csv"
    with ProcessPoolExecutor(args.jobs) as pool:
        for row in pool.map(one, tasks):
            append_row(path, FIELDS, row)
            print(row, flush=True)
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
