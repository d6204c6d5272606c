"""What this machine charges for work done in short stretches between waits (issue 22).

Under kube-scheduler the extender's work per pod comes in short stretches (filter and the work
after it, the bind, the event, two watch events), each after a wait of a few milliseconds
while kube-scheduler runs its own cycle. On a shared VM the same code then costs more CPU than
in a tight loop: whatever it does not touch for a few milliseconds (its objects, arrays,
code) is gone from the caches the vCPU shares with other tenants when it resumes. This
measures that tax on the machine at hand, in one process, runs alternating so that the VM's
drift does not favour one side:

- ``synthetic``: a fixed workload over a fixed working set (300 of a dict's 20,000 small
  objects looked up at random, a column of each of 20 NumPy arrays of 1,000 x 8 values
  compared and summed): its CPU per stretch with no
  wait between stretches, after a ``--gap-ms`` sleep, and after a ``--gap-ms`` busy wait (no
  sleep: the vCPU never idles, nothing else runs in the process);
- ``extender``: the pod cycle of ``bench_instructions.py`` in process (1,000 nodes x 8 T4, the
  API server's pod, the watch's ADDED, filter with the exact cut, the work after the answer,
  bind with the explanation), with no wait between the steps and with a ``--gap-ms`` sleep
  before each (the service's background threads run during the waits, as they do in the
  running extender).

    .venv/bin/python benchmarks/bench_idle_tax.py --gap-ms 4 --rounds 3

CPU is the thread's (``time.thread_time``) over the stretch only, never the wait. The ratio
"after a wait / without" is the tax; timing the extender in the running cluster
(``bench_scheduler.py``) includes it, counting instructions (``bench_instructions.py``) does
not.
"""

from __future__ import annotations

import argparse
import datetime
import platform as host
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def synthetic(gap_s: float, how: str, stretches: int) -> float:
    """Median CPU (us) of one stretch of the fixed workload, after a wait of ``gap_s``
    (``how``: ``sleep`` or ``spin``; ``gap_s`` 0: none)."""
    draw = random.Random(1)
    objects: list[dict[str, Any]] = [{"name": f"node-{i:05d}", "value": i, "pair": [i, i + 1]}
                                     for i in range(20000)]
    index = {o["name"]: o for o in objects}
    names = [o["name"] for o in objects]
    arrays = [np.random.default_rng(i).random((1000, 8)) for i in range(20)]

    def stretch() -> float:
        total = 0.0
        for name in draw.sample(names, 300):
            entry = index[name]
            total += entry["value"] + entry["pair"][1]
        for array in arrays:
            total += float((array[:, 0] > 0.5).sum())
        return total

    spent = []
    for _ in range(stretches):
        _wait(gap_s, how)
        started = time.thread_time()
        stretch()
        spent.append(time.thread_time() - started)
    return statistics.median(spent) * 1e6


def _wait(gap_s: float, how: str) -> None:
    if gap_s <= 0:
        return
    if how == "sleep":
        time.sleep(gap_s)
        return
    end = time.perf_counter() + gap_s
    while time.perf_counter() < end:
        pass


def extender(gap_s: float, pods: int, warmup: int, n_nodes: int) -> float:
    """Mean CPU (us) per pod of the in-process pod cycle, a ``gap_s`` sleep before each step."""
    import orjson
    from bench_instructions import api_pod, start_burst

    from extender.server.wire import decode_binding_args

    driver = start_burst(n_nodes)
    service, verbs = driver.service, driver.service.verbs
    spent = 0.0

    def step(call: Callable[[], Any]) -> Any:
        nonlocal spent
        _wait(gap_s, "sleep")
        started = time.thread_time()
        out = call()
        if counted:
            spent += time.thread_time() - started
        return out

    for i in range(warmup + pods):
        counted = i >= warmup
        pod = api_pod(i)
        listed = driver.listed(i, 5)  # kube-scheduler repeats its list (--repeat 5)
        body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": listed})
        event = orjson.loads(orjson.dumps(pod))
        step(lambda: service.applier.pod_event("ADDED", event))  # noqa: B023
        answer = step(lambda: verbs.filter(driver.decode_filter_args(body)))  # noqa: B023
        feasible = orjson.loads(answer.body)["NodeNames"]
        step(verbs.warm_next)
        if len(feasible) != 1:
            raise SystemExit(f"expected one node answered (the exact cut), got {len(feasible)}")
        best = feasible[0]
        bind_body = orjson.dumps({"PodName": pod["metadata"]["name"], "PodNamespace": "bench",
                                  "PodUID": pod["metadata"]["uid"], "Node": best})
        bound = step(lambda: verbs.bind(decode_binding_args(bind_body)))  # noqa: B023
        if orjson.loads(bound.body)["Error"]:
            raise SystemExit(f"bind failed: {bound.body!r}")
        driver.free[best] -= 1
    service.stop()
    return spent / pods * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gap-ms", type=float, default=4.0,
                        help="the wait before each stretch (default 4: kube-scheduler's own "
                             "cycle between the extender's calls at 1,000 nodes)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds (without, with a wait) of each part")
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--part", choices=("synthetic", "extender", "both"), default="both")
    args = parser.parse_args()
    if args.gap_ms <= 0 or args.rounds < 1 or args.pods < 1 or args.warmup < 0 or \
            args.nodes < 1:
        parser.error("--gap-ms, --rounds, --pods and --nodes must be > 0, --warmup >= 0")
    gap = args.gap_ms / 1000
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {host.node()}, "
          f"{host.machine()}, Python {host.python_version()}; wait {args.gap_ms:g} ms, "
          f"{args.rounds} alternating rounds")
    if args.part in ("synthetic", "both"):
        rows: dict[str, list[float]] = {"none": [], "sleep": [], "spin": []}
        for _ in range(args.rounds):
            rows["none"].append(synthetic(0.0, "sleep", 300))
            rows["sleep"].append(synthetic(gap, "sleep", 300))
            rows["spin"].append(synthetic(gap, "spin", 300))
        base = statistics.mean(rows["none"])
        for how, values in rows.items():
            print(f"synthetic, wait {how:5}: {_us(values)} us per stretch (median); "
                  f"x{statistics.mean(values) / base:.2f}")
    if args.part in ("extender", "both"):
        runs: dict[str, list[float]] = {"none": [], "sleep": []}
        for _ in range(args.rounds):
            runs["none"].append(extender(0.0, args.pods, args.warmup, args.nodes))
            runs["sleep"].append(extender(gap, args.pods, args.warmup, args.nodes))
        base = statistics.mean(runs["none"])
        for how, values in runs.items():
            print(f"extender, wait {how:5}: {_us(values)} us of CPU per pod (mean); "
                  f"x{statistics.mean(values) / base:.2f}")
    return 0


def _us(values: list[float]) -> str:
    return ", ".join(f"{v:6.0f}" for v in values)


if __name__ == "__main__":
    raise SystemExit(main())
