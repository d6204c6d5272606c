"""Replay speed side by side with another tree, and a differential check of the results.

Usage (from the repository root)::

    nice -n 19 .venv/bin/python benchmarks/placement_speed.py --base-tree /work/base \
        --trace default --policy cost-fragmentation --seed 42 --rounds 2

Each round runs one replay per tree, alternating (base, this tree, base, ...), each in its own
process (``PYTHONPATH=<tree>``, this virtual environment), so that both see the same load.
Prints every replay's wall time (``ReplayResult.wall_seconds``: the replay loop, not the
trace loading) and its process CPU time (what it was given: less sensitive to the others'
load than wall time), the medians per tree and their ratios, the load average before and after, and
whether the two trees agree on every point of the allocation curve, on placed and failed
pods and on the bill, rounded to 4 decimals (exit status 1 if not).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
from extender.simulator.replay import Replay, ReplayOptions
from extender.simulator.scenario import openb_scenario
from extender.simulator.trace import load_trace
nodes, pods, policy, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import extender
scenario = openb_scenario(load_trace(nodes, pods), pods_source=pods, nodes_source=nodes)
replay = Replay(scenario, ReplayOptions(policy=policy, seed=seed))
started = time.process_time()
result = replay.run()
cpu = time.process_time() - started
print(json.dumps({"tree": extender.__file__, "wall": result.wall_seconds, "cpu": cpu,
                  "placed": result.placed, "failed": result.failed,
                  "cost": round(result.cost_per_hour, 4),
                  "curve": [[p.arrived_pct, round(p.unallocated_pct, 4),
                             round(p.frag_pct, 4), round(p.occupied_cost_per_hour, 4)]
                            for p in result.curve]}))
"""


def replay_in(tree: Path, nodes: str, pods: str, policy: str, seed: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, nodes, pods, policy, str(seed)],
                         env=env, check=True, capture_output=True, text=True, cwd=tree)
    record: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(record["tree"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"error: the replay under {tree} imported {record['tree']}")
    return record


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a[k] == b[k] for k in ("placed", "failed", "cost", "curve"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-tree", required=True)
    parser.add_argument("--trace-dir", default=str(ROOT.parent / "shared/data/openb"))
    parser.add_argument("--trace", default="default")
    parser.add_argument("--policy", default="cost-fragmentation")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    trace_dir = Path(args.trace_dir)
    nodes = str(trace_dir / "openb_node_list_gpu_node.csv")
    pods = str(trace_dir / f"openb_pod_list_{args.trace}.csv")
    trees = {"base": Path(args.base_tree), "this": ROOT}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    for round_ in range(args.rounds):
        for name, tree in trees.items():
            record = replay_in(tree, nodes, pods, args.policy, args.seed)
            runs[name].append(record)
            unalloc = dict((p[0], p[1]) for p in record["curve"]).get(100)
            print(f"round {round_ + 1} {name}: {record['wall']:.2f} s wall, {record['cpu']:.2f} s "
                  f"CPU, unallocated at 100 % "
                  f"{unalloc}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    for key, what in (("wall", "wall"), ("cpu", "CPU time")):
        base = statistics.median(r[key] for r in runs["base"])
        this = statistics.median(r[key] for r in runs["this"])
        print(f"median {what}: base {base:.2f} s, this tree {this:.2f} s, speed-up "
              f"{base / this:.2f} x")
    agree = all(same(runs["base"][0], r) for r in runs["base"] + runs["this"])
    print("results identical to 4 decimals (curve, placed, failed, bill):", agree)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
