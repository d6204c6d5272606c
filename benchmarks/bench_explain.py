"""What the bind's explanation costs next to the prioritize it follows.

    .venv/bin/python benchmarks/bench_explain.py                 # 1,000 and 5,000 nodes
    .venv/bin/python benchmarks/bench_explain.py --sizes 1000 --cycles 50

In process, on ``bench_verbs``'s generated cluster (offline service, the production code path
minus HTTP and the API server), one untyped 1-GPU pod after another: filter and prioritize on
every node, then the ``Announcer``'s breakdown of the top node against the runner-up (what the
bind computes before its Normal event). Prints the medians side by side, measured in the same
run: the ratio is the figure, not the milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_verbs import bench_pod, generate_cluster

from extender.platform import load_platform
from extender.server.service import ExtenderService
from extender.sync.offline import parse_cluster_document


def bench(n_nodes: int, cycles: int) -> tuple[float, float]:
    cluster = generate_cluster(n_nodes)
    service = ExtenderService.from_cluster_objects(load_platform(),
                                                   parse_cluster_document(cluster))
    service.start()
    scheduler = service.scheduler
    names = service.inventory.node_names()
    prioritize, explain = [], []
    try:
        for i in range(cycles):
            pod = bench_pod("untyped", i)
            scheduler.filter(pod, names, None)
            start = time.perf_counter()
            outcome = scheduler.prioritize(pod, names, None)
            prioritize.append(time.perf_counter() - start)
            assert outcome.scores is not None
            node = names[int(outcome.scores.argmax())]
            start = time.perf_counter()
            explained = scheduler.announcer.breakdown_of(outcome.cycle, node, None)
            explain.append(time.perf_counter() - start)
            assert explained is not None and explained.chosen.terms is not None
    finally:
        service.stop()
    return statistics.median(prioritize), statistics.median(explain)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--cycles", type=int, default=100)
    args = parser.parse_args()
    print(f"{'nodes':>6} {'prioritize ms':>14} {'bind explanation ms':>20} {'ratio':>6}")
    for n in args.sizes:
        p, e = bench(n, args.cycles)
        print(f"{n:>6} {p * 1e3:>14.3f} {e * 1e3:>20.3f} {e / p:>6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
