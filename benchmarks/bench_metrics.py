"""What one Prometheus scrape of the extender's /metrics costs, in process.

    .venv/bin/python benchmarks/bench_metrics.py                       # 1,000 and 10,000 nodes
    .venv/bin/python benchmarks/bench_metrics.py --tree /work/base     # another checkout's

What is measured: ``ExtenderMetrics.exposition()`` of an offline extender service on N nodes x
8 T4s (``bench_verbs.burst_cluster``), timed with the process CPU clock: the first scrape, a
second one with nothing changed, and one after each of ``--placements`` binds (each changes one
node's row, as a burst between two scrapes does). Every scrape holds the GIL the verbs need.
``--tree DIR`` imports the extender from another checkout (run the two one after the other).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]


def scrape_costs(n_nodes: int, placements: int) -> dict[str, float]:
    from extender.platform import load_platform
    from extender.server.service import ExtenderService
    from extender.server.wire import decode_binding_args, decode_extender_args
    from extender.sync.offline import parse_cluster_document

    # after the extender: importing bench_verbs puts this checkout first on sys.path
    bench_verbs = importlib.import_module("bench_verbs")

    cluster = bench_verbs.burst_cluster(n_nodes)
    service = ExtenderService.from_cluster_objects(load_platform(),
                                                   parse_cluster_document(cluster))
    service.start()
    clock = time.process_time

    def timed() -> tuple[float, int]:
        started = clock()
        body = service.metrics.exposition()
        return clock() - started, len(body)

    first, size = timed()
    again, _ = timed()
    after: list[float] = []
    names = [item["metadata"]["name"] for item in cluster["items"]]
    for i in range(placements):
        pod = bench_verbs.burst_pod(i)
        verbs = service.verbs
        answer = verbs.filter(decode_extender_args(orjson.dumps(
            {"Pod": pod, "Nodes": None, "NodeNames": names})))
        node = orjson.loads(answer.body)["NodeNames"][0]
        verbs.bind(decode_binding_args(orjson.dumps(
            {"PodName": pod["metadata"]["name"], "PodNamespace": "bench",
             "PodUID": pod["metadata"]["uid"], "Node": node})))
        after.append(timed()[0])
    service.stop()
    return {"first_s": first, "again_s": again,
            "after_one_bind_s": statistics.median(after) if after else float("nan"),
            "megabytes": size / 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--placements", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=REPO,
                        help="the checkout whose extender is imported")
    args = parser.parse_args()
    sys.path[:0] = [str(args.tree), str(REPO / "benchmarks")]
    import extender

    print(f"# bench_metrics: extender from {Path(extender.__file__).parents[1]}; process CPU "
          "seconds per scrape")
    for size in args.sizes:
        row = scrape_costs(size, args.placements)
        print(f"{size:6d} nodes | first {row['first_s']:.3f} s | again {row['again_s']:.3f} s"
              f" | after one bind {row['after_one_bind_s']:.3f} s"
              f" | {row['megabytes']:.1f} MB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
