"""The default strategy's score, paired A/B in one process: another tree's
``core/scoring/cost_fragmentation.py`` against this tree's, on the same burst.

Usage (from the repository root)::

    nice -n 19 .venv/bin/python benchmarks/strategy_ab.py \
        --base /work/staging/extender/core/scoring/cost_fragmentation.py

The base module is loaded under another name on this tree's kernels (only the strategy's own
file differs). A 1,000-node cluster (``bench_verbs.generate_cluster``) serves a burst of each
pod kind (filter + prioritize per pod; each prioritize holds, so every pod sees a new
snapshot); after each prioritize both strategies score the same (snapshot, request, fit)
twice, the first time on a snapshot new to them, the second on the same one (a replica
before the next hold), in alternating order. Both run under one load, so their ratio holds
where separate runs drift +-30 %. Prints the median thread CPU per call and the ratio;
exits 1 if a score differs (rows, scores or GPU choice).

Fair by construction: both use a salt of their own (own row-cache keys: each pays its own
refreshes) and share the served strategy's fragmentation model (``scorer.py`` is the same
file in both); the inventory's row cache holds more keys than its default so that the
experiment's extra keys evict nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_verbs  # the cluster and the pods of bench_verbs


def load_base(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("base_cost_fragmentation", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"error: --base {path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True,
                        help="the other tree's extender/core/scoring/cost_fragmentation.py")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=170, help="per kind, the first 20 warm up")
    args = parser.parse_args()

    from extender.core.scoring import cost_fragmentation
    from extender.platform import load_platform
    from extender.server.service import ExtenderService
    from extender.server.wire import decode_extender_args
    from extender.sync.offline import parse_cluster_document

    base_module = load_base(args.base)
    cluster = bench_verbs.generate_cluster(args.nodes)
    names = [i["metadata"]["name"] for i in cluster["items"] if i["kind"] == "Node"]
    service = ExtenderService.from_cluster_objects(load_platform(),
                                                   parse_cluster_document(cluster))
    service.start()
    served: Any = service.scheduler.scorer.strategy
    context = served.context
    strategies = {"base": base_module.CostFragmentation(context),
                  "this": cost_fragmentation.CostFragmentation(context)}
    for strategy in strategies.values():
        strategy.salt = served.salt + 1
        strategy.frag = served.frag
    service.scheduler.inventory._row_cache._max_keys = 16
    last: dict[str, Any] = {}
    real = served.score

    def spy(snapshot: Any, req: Any, fit: Any) -> Any:
        last["args"] = (snapshot, req, fit)
        return real(snapshot, req, fit)

    served.score = spy
    clock = time.thread_time_ns
    differ = 0
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.nodes} nodes, "
          f"base {args.base}")
    for index, kind in enumerate(bench_verbs.KINDS):
        spent: dict[tuple[str, int], list[int]] = {(n, a): [] for n in strategies for a in (0, 1)}
        for i in range(args.pods):
            body = orjson.dumps({"Pod": bench_verbs.bench_pod(kind, index * 100_000 + i),
                                 "Nodes": None, "NodeNames": names})
            service.verbs.filter(decode_extender_args(body))
            service.verbs.prioritize(decode_extender_args(body))
            order = sorted(strategies, reverse=bool(i % 2))
            results = {}
            for again in (0, 1):
                for name in order:
                    started = clock()
                    results[name] = strategies[name].score(*last["args"])
                    if i >= 20:
                        spent[(name, again)].append(clock() - started)
            a, b = results["base"], results["this"]
            if not (np.array_equal(a.rows, b.rows) and np.array_equal(a.scores, b.scores)
                    and np.array_equal(a.choice, b.choice)):
                differ += 1
        med = {key: statistics.median(values) / 1000 for key, values in spent.items()}
        print(f"{kind:8} new snapshot: base {med[('base', 0)]:.0f} this {med[('this', 0)]:.0f}"
              f" us ({med[('this', 0)] / med[('base', 0)]:.2f}) | same snapshot: base "
              f"{med[('base', 1)]:.0f} this {med[('this', 1)]:.0f} us "
              f"({med[('this', 1)] / med[('base', 1)]:.2f})")
    service.stop()
    print(f"scores identical on every call: {differ == 0}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
