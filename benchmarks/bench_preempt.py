"""Benchmark of the preemption decision (``core/preempt.py``): one preempt call over N candidate
nodes, each 8 L4s (24 GiB) full of low-priority shares (4 x 6 GiB per GPU), as kube-scheduler
would send them after its dry run.

    .venv/bin/python benchmarks/bench_preempt.py                # 1 / 10 / 100 candidate nodes
    .venv/bin/python benchmarks/bench_preempt.py --nodes 10 --reps 3

Requests timed: a 14 GiB share (three 6 GiB pods on one GPU: the exact search per GPU, k = 1..3),
a whole GPU (all four pods of one GPU), four whole GPUs (16 pods: past 4,096 sets per size, the
greedy search). Figures go to benchmarks' README only with date, machine and load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.core.preempt import PodOnNode, preempt
from extender.inventory import Holding
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from tests.core.helpers import inventory, node, placement, request


def cluster(n: int) -> tuple[ClusterSnapshot, dict[str, list[PodOnNode]]]:
    infos = [node(f"n{i}", "l4", 8) for i in range(n)]
    inv = inventory(*infos)
    candidates: dict[str, list[PodOnNode]] = {}
    for info in infos:
        pods = []
        for g in range(8):
            for j in range(4):
                uid = f"{info.name}-{g}-{j}"
                assignment = Assignment(info.name, RequestKind.VRAM, (GpuGrant(g, 6144),))
                inv.observe(Holding(PodKey("default", uid, uid), info.name, assignment))
                pods.append(PodOnNode(uid, 100, float(g * 4 + j), assignment,
                                      in_tree=j == 0))
        candidates[info.name] = pods
    return inv.snapshot(), candidates


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, nargs="*", default=[1, 10, 100])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    requests = {"14 GiB share": request("vram", vram=14 * 1024),
                "1 whole GPU": request("whole", 1), "4 whole GPUs": request("whole", 4)}
    for n in args.nodes:
        snapshot, candidates = cluster(n)
        for label, req in requests.items():
            times = []
            for _ in range(args.reps):
                started = time.perf_counter()
                result = preempt(snapshot, placement(req), 1000, candidates)
                times.append(time.perf_counter() - started)
            victims = len(result[0].victims)
            print(f"{n:4d} nodes  {label:13s}  median {statistics.median(times) * 1000:8.1f} ms"
                  f"  ({statistics.median(times) / n * 1000:6.2f} ms/node, {victims} victims)")


if __name__ == "__main__":
    main()
