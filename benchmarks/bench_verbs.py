"""Benchmark of the extender verbs over real HTTP: filter and prioritize latency under gunicorn.

    .venv/bin/python benchmarks/bench_verbs.py                        # 1,000 / 5,000 / 10,000
    .venv/bin/python benchmarks/bench_verbs.py --sizes 1000 --cycles 50   # quick
    .venv/bin/python benchmarks/bench_verbs.py --profile 5000         # where the time goes
    .venv/bin/python benchmarks/bench_verbs.py --in-process --sizes 1000 [--tree /work/base]
    .venv/bin/python benchmarks/bench_verbs.py --in-process --steps --sizes 1000   # per step
    .venv/bin/python benchmarks/bench_verbs.py --in-process --burst --sizes 1000 [--tree DIR]

What is measured: ``gpu-extender serve --cluster-file`` (offline mode, the production code
path minus the API server) on a generated cluster of N GPU nodes, driven the way kube-scheduler
drives it: one keep-alive connection, one pod at a time, ``POST /filter`` then
``POST /prioritize`` with ``NodeNames`` = every node (``percentageOfNodesToScore: 100``), a new
pod (new UID) every cycle, so every cycle decodes the pod, runs the fit kernel, scores and
places a reservation. Latency is client-side: from sending the request to having read the whole
answer. Four pod kinds: typed (1 x L4), untyped (1 whole GPU of any unprotected type), MIG
(``nvidia.com/mig-1g.10gb``) and VRAM share (``gpu-extender.io/gpu-memory: 6Gi``).

The floor: a plain Flask app under the same gunicorn settings whose filter parses the body with
orjson and answers every node feasible, and whose prioritize answers every node with score 0
(same answer sizes as ours). Both servers run during the same invocation, on the same bodies,
so the ratio is the extender's own cost.

``--in-process``: the verbs' own CPU, without HTTP: the wire decode of the body, then
``SchedulingVerbs.filter`` / ``prioritize`` called directly, timed with the thread's CPU clock
(less sensitive to a loaded machine than wall time), median per call; ``--tree DIR`` imports the
extender from another checkout (side by side with a base: same cluster, same pods), and the
service's memo counters are printed after each size.

``--burst``: what one pod of a burst costs the verbs, as ``bench_scheduler.py`` drives them
but without the control plane: N nodes x 8 T4 (empty), ``--cycles`` one-GPU pods of one
Deployment, each filtered on the nodes with a GPU left (what kube-scheduler's own filters
pass; shuffled per call: it lists them in the order its parallel filters finish),
prioritized on the names the exact cut kept (its cluster facts known: no taints, Services or
affinity; not at all when one name is kept, as kube-scheduler skips prioritize for one
node: ``prioritize_calls_per_pod``) and bound to the best (offline, so the binding is applied
to the inventory at once: each pod changes the row of the one before, as in the burst).
Median thread CPU per call, after ``--warmup`` pods. Run twice, without and with the warm the
worker runs once a filter's answer is sent (``scheduling/warm.py``; timed apart from filter).

Cluster: per 10 nodes, 3 L4 x8, 2 T4 x4, 1 A10G x4, 1 A100-80GB x8 (protected), 1 A100-80GB
x8 with dynamic MIG (node agent annotation), 1 A100-80GB with mixed-strategy MIG (allocatable
counts), 1 L4 x4 time-sliced (4 replicas); about half the nodes carry a running pod with its
``gpu-extender.io/assigned`` annotation (1-7 whole GPUs, a VRAM share or MIG instances). Fixed
seed.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import http.client
import os
import platform as host
import pstats
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

JSON = dict[str, Any]
KINDS = ("typed", "untyped", "mig", "vram")
VERBS = ("filter", "prioritize")


# -- the cluster ------------------------------------------------------------------------------

def _node(name: str, labels: dict[str, str], allocatable: dict[str, str],
          annotations: dict[str, str] | None = None) -> JSON:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels},
                         "annotations": annotations or {}},
            "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "pods": "110",
                                       **allocatable}}}


def _gfd(product: str, memory: int, count: int, **extra: str) -> dict[str, str]:
    return {"nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": str(memory),
            "nvidia.com/gpu.count": str(count), **extra}


def _assigned(node: str, kind: str, type_id: str, gpus: list[JSON]) -> str:
    return orjson.dumps({"version": 1, "node": node, "kind": kind, "type": type_id,
                         "generation": 1, "gpus": gpus}).decode()


def _running_pod(name: str, node: str, annotation: str, limits: dict[str, str]) -> JSON:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}",
                         "annotations": {"gpu-extender.io/assigned": annotation}},
            "spec": {"nodeName": node, "containers": [
                {"name": "main", "resources": {"limits": limits,
                                               "requests": {"cpu": "4", "memory": "16Gi"}}}]},
            "status": {"phase": "Running"}}


def generate_cluster(n_nodes: int, seed: int = 1) -> JSON:
    rng = random.Random(seed)
    items: list[JSON] = []
    pods: list[JSON] = []
    for i in range(n_nodes):
        slot = i % 10
        name = f"gpu-{i:05d}"
        busy = rng.random() < 0.5
        if slot in (0, 1, 2):
            items.append(_node(name, _gfd("NVIDIA-L4", 23034, 8), {"nvidia.com/gpu": "8"}))
            if busy and rng.random() < 0.5:
                pods.append(_running_pod(f"vram-{i}", name, _assigned(
                    name, "vram", "l4", [{"index": rng.randrange(8), "vramMiB": 8192}]),
                    {"gpu-extender.io/gpu-memory": "8Gi"}))
            elif busy:
                k = rng.randint(1, 7)
                pods.append(_running_pod(f"whole-{i}", name, _assigned(
                    name, "whole", "l4", [{"index": g, "vramMiB": 23034, "whole": True}
                                          for g in range(k)]), {"nvidia.com/gpu": str(k)}))
        elif slot in (3, 4):
            items.append(_node(name, _gfd("Tesla-T4", 15360, 4), {"nvidia.com/gpu": "4"}))
            if busy:
                k = rng.randint(1, 3)
                pods.append(_running_pod(f"whole-{i}", name, _assigned(
                    name, "whole", "t4", [{"index": g, "vramMiB": 15360, "whole": True}
                                          for g in range(k)]), {"nvidia.com/gpu": str(k)}))
        elif slot == 5:
            items.append(_node(name, _gfd("NVIDIA-A10G", 23028, 4), {"nvidia.com/gpu": "4"}))
        elif slot == 6:
            items.append(_node(name, _gfd("NVIDIA-A100-SXM4-80GB", 81920, 8),
                               {"nvidia.com/gpu": "8"}))
        elif slot == 7:
            gpus = [{"index": g, "uuid": f"GPU-{i}-{g}", "type": "a100-80gb",
                     "memoryMiB": 81920, "mig": {"mode": "dynamic"}} for g in range(8)]
            items.append(_node(name, {}, {"nvidia.com/gpu": "8"}, {
                "gpu-extender.io/gpus": orjson.dumps({"version": 1, "gpus": gpus}).decode()}))
            if busy:
                pods.append(_running_pod(f"mig-{i}", name, _assigned(name, "mig", "a100-80gb", [
                    {"index": 0, "vramMiB": 40192,
                     "mig": {"profile": "3g.40gb", "start": 0, "slices": 4}}]),
                    {"nvidia.com/mig-3g.40gb": "1"}))
        elif slot == 8:
            items.append(_node(name, _gfd("NVIDIA-A100-SXM4-80GB", 81920, 2,
                                          **{"nvidia.com/mig.strategy": "mixed"}),
                               {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"}))
        else:
            items.append(_node(name, _gfd("NVIDIA-L4", 23034, 4, **{
                "nvidia.com/gpu.replicas": "4",
                "nvidia.com/gpu.sharing-strategy": "time-slicing"}),
                {"nvidia.com/gpu.shared": "16"}))
    return {"apiVersion": "v1", "kind": "List", "items": items + pods}


def bench_pod(kind: str, serial: int) -> JSON:
    """A pending pod as kube-scheduler sends it (informer copy: no apiVersion/kind)."""
    limits = {"typed": {"nvidia.com/gpu": "1"}, "untyped": {"nvidia.com/gpu": "1"},
              "mig": {"nvidia.com/mig-1g.10gb": "1"},
              "vram": {"gpu-extender.io/gpu-memory": "6Gi"}}[kind]
    labels = {"app": f"bench-{kind}"}
    if kind == "typed":
        labels["gpu-extender.io/accelerator"] = "l4"
    name = f"{kind}-{serial}"
    return {"metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}",
                         "resourceVersion": str(1000 + serial), "labels": labels,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedulerName": "default-scheduler", "containers": [
                {"name": "main", "image": "registry.example/app:1",
                 "resources": {"limits": limits, "requests": {**limits, "cpu": "2",
                                                              "memory": "8Gi"}}}]},
            "status": {"phase": "Pending", "qosClass": "Burstable"}}


# -- servers ----------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def floor_app() -> Any:
    """The floor: parse the body, answer every node."""
    from flask import Flask, Response, request

    app = Flask("floor")

    @app.post("/filter")
    def filter_all() -> Response:
        args = orjson.loads(request.get_data(cache=False))
        body = orjson.dumps({"NodeNames": args["NodeNames"], "FailedNodes": {},
                             "FailedAndUnresolvableNodes": {}, "Error": ""})
        return Response(body, content_type="application/json")

    @app.post("/prioritize")
    def prioritize_all() -> Response:
        args = orjson.loads(request.get_data(cache=False))
        body = orjson.dumps([{"Host": name, "Score": 0} for name in args["NodeNames"]])
        return Response(body, content_type="application/json")

    @app.get("/readyz")
    def ready() -> Response:
        return Response(b"{}", content_type="application/json")

    return app


def run_floor_server(port: int, threads: int) -> None:
    from extender.runtime.gunicorn import GunicornApp
    from extender.server.gunicorn_conf import ServerOptions, gunicorn_settings

    settings = gunicorn_settings(ServerOptions(port=port, threads=threads, log_level="warning"))
    GunicornApp(settings, floor_app).run()


@contextmanager
def server(command: list[str], port: int) -> Iterator[None]:
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 300
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {' '.join(command)}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    conn.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server not ready after 300 s")
            time.sleep(0.2)
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


# -- the client -------------------------------------------------------------------------------

def post(conn: http.client.HTTPConnection, path: str, body: bytes) -> tuple[float, bytes]:
    started = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"{path}: HTTP {response.status}: {data[:200]!r}")
    return elapsed, data


def drive(port: int, names: list[str], kind: str, *, cycles: int, warmup: int,
          serial_base: int) -> dict[str, list[float]]:
    """kube-scheduler's serial cycle: filter then prioritize, a new pod each time."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times: dict[str, list[float]] = {"filter": [], "prioritize": [], "cycle": []}
    for i in range(warmup + cycles):
        body = orjson.dumps({"Pod": bench_pod(kind, serial_base + i), "Nodes": None,
                             "NodeNames": names})
        filter_s, answer = post(conn, "/filter", body)
        doc = orjson.loads(answer)
        if doc.get("Error"):
            raise RuntimeError(f"filter error: {doc['Error']}")
        prioritize_s, _ = post(conn, "/prioritize", body)
        if i >= warmup:
            times["filter"].append(filter_s)
            times["prioritize"].append(prioritize_s)
            times["cycle"].append(filter_s + prioritize_s)
    conn.close()
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summarize(times: dict[str, list[float]]) -> dict[str, float]:
    out = {}
    for verb, values in times.items():
        out[f"{verb}_p50_ms"] = round(statistics.median(values) * 1000, 2)
        out[f"{verb}_p99_ms"] = round(percentile(values, 99) * 1000, 2)
    return out


def bench_size(n_nodes: int, cycles: int, warmup: int, threads: int) -> list[JSON]:
    rows: list[JSON] = []
    with tempfile.TemporaryDirectory() as tmp:
        cluster = generate_cluster(n_nodes)
        path = Path(tmp) / f"cluster-{n_nodes}.json"
        path.write_bytes(orjson.dumps(cluster))
        names = [item["metadata"]["name"] for item in cluster["items"]
                 if item["kind"] == "Node"]
        ours, floor = free_port(), free_port()
        serve = [sys.executable, "-m", "extender", "serve", "--cluster-file", str(path),
                 "--port", str(ours), "--threads", str(threads), "--log-level", "warning"]
        floor_cmd = [sys.executable, __file__, "--floor-server", str(floor),
                     "--threads", str(threads)]
        with server(serve, ours), server(floor_cmd, floor):
            for index, kind in enumerate(KINDS):
                measured = summarize(drive(ours, names, kind, cycles=cycles, warmup=warmup,
                                           serial_base=index * 100_000))
                baseline = summarize(drive(floor, names, kind, cycles=cycles, warmup=warmup,
                                           serial_base=index * 100_000))
                rows.append({"nodes": n_nodes, "pod": kind, **measured,
                             **{f"floor_{k}": v for k, v in baseline.items()}})
    return rows


def print_table(rows: list[JSON]) -> None:
    header = (f"{'nodes':>6} {'pod':<8} | {'filter p50/p99':>15} | {'prio p50/p99':>15} | "
              f"{'cycle p50/p99':>15} || {'floor filter':>13} | {'floor prio':>13} | "
              f"{'floor cycle':>13} | ratio p99")
    print(header)
    print("-" * len(header))
    def pair(r: JSON, prefix: str) -> str:
        return f"{r[prefix + '_p50_ms']:6.2f}/{r[prefix + '_p99_ms']:6.2f}"

    for r in rows:
        ratio = r["cycle_p99_ms"] / max(r["floor_cycle_p99_ms"], 1e-9)
        print(f"{r['nodes']:>6} {r['pod']:<8} | {pair(r, 'filter'):>15} | "
              f"{pair(r, 'prioritize'):>15} | {pair(r, 'cycle'):>15} || "
              f"{pair(r, 'floor_filter'):>13} | {pair(r, 'floor_prioritize'):>13} | "
              f"{pair(r, 'floor_cycle'):>13} | {ratio:5.2f}")


# -- profile ----------------------------------------------------------------------------------

def profile(n_nodes: int, cycles: int) -> None:
    """In-process (Flask test client, no sockets): where a cycle's time goes."""
    from extender.platform import load_platform
    from extender.server.app import create_app
    from extender.server.service import ExtenderService
    from extender.sync.offline import parse_cluster_document

    cluster = generate_cluster(n_nodes)
    names = [i["metadata"]["name"] for i in cluster["items"] if i["kind"] == "Node"]
    service = ExtenderService.from_cluster_objects(load_platform(),
                                                   parse_cluster_document(cluster))
    service.start()
    client = create_app(service).test_client()
    bodies = [orjson.dumps({"Pod": bench_pod(KINDS[i % 4], i), "Nodes": None,
                            "NodeNames": names}) for i in range(cycles + 8)]
    for body in bodies[:8]:
        client.post("/filter", data=body)
        client.post("/prioritize", data=body)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for body in bodies[8:]:
        client.post("/filter", data=body)
        client.post("/prioritize", data=body)
    profiler.disable()
    elapsed = time.perf_counter() - started
    print(f"{cycles} cycles, {elapsed / cycles * 1000:.2f} ms per filter+prioritize "
          f"(in-process, profiled)")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def in_process(n_nodes: int, cycles: int, warmup: int) -> list[JSON]:
    """The verbs' CPU per call, in process: (wire decode + verb) per filter and prioritize."""
    from extender.platform import load_platform
    from extender.server.service import ExtenderService
    from extender.server.wire import decode_extender_args
    from extender.sync.offline import parse_cluster_document

    cluster = generate_cluster(n_nodes)
    names = [i["metadata"]["name"] for i in cluster["items"] if i["kind"] == "Node"]
    service = ExtenderService.from_cluster_objects(load_platform(),
                                                   parse_cluster_document(cluster))
    service.start()
    verbs, clock = service.verbs, time.thread_time_ns
    rows: list[JSON] = []
    for index, kind in enumerate(KINDS):
        spent: dict[str, list[int]] = {"filter": [], "prioritize": []}
        for i in range(warmup + cycles):
            body = orjson.dumps({"Pod": bench_pod(kind, index * 100_000 + i), "Nodes": None,
                                 "NodeNames": names})
            started = clock()
            verbs.filter(decode_extender_args(body))
            between = clock()
            verbs.prioritize(decode_extender_args(body))
            ended = clock()
            if i >= warmup:
                spent["filter"].append(between - started)
                spent["prioritize"].append(ended - between)
        rows.append({"nodes": n_nodes, "pod": kind, **{
            f"{verb}_cpu_us": round(statistics.median(values) / 1000) for verb, values in
            spent.items()}})
    counters = service._counters()
    print(f"# {n_nodes} nodes, counters: " + ", ".join(
        f"{k} {int(v)}" for k, v in counters.items() if k.endswith(("hits", "reused"))))
    service.stop()
    return rows


def burst_cluster(n_nodes: int) -> JSON:
    """``bench_scheduler.py``'s fleet: N empty nodes x 8 T4."""
    items = [_node(f"node-{i:05d}", _gfd("Tesla-T4", 15360, 8), {"nvidia.com/gpu": "8"})
             for i in range(n_nodes)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def burst_pod(serial: int) -> JSON:
    """One replica of the burst's Deployment: one whole GPU, a little CPU and memory."""
    name = f"burst-{serial}"
    requests = {"nvidia.com/gpu": "1", "cpu": "100m", "memory": "128Mi"}
    return {"metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}",
                         "resourceVersion": str(1000 + serial), "labels": {"app": "burst"},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedulerName": "default-scheduler", "containers": [
                {"name": "main", "image": "registry.example/app:1", "resources": {
                    "limits": {"nvidia.com/gpu": "1"}, "requests": requests}}]},
            "status": {"phase": "Pending", "qosClass": "Burstable"}}


def burst_service(cluster: JSON) -> Any:
    """A started offline ``ExtenderService`` on ``cluster`` (``burst_cluster``) whose exact
    cut runs: its cluster facts listed as the watches would (nothing that stops the cut)."""
    from extender.inventory.store import Inventory
    from extender.platform import load_platform
    from extender.server.service import ExtenderService
    from extender.sync.apply import InventoryApplier
    from extender.sync.offline import OfflineCluster, parse_cluster_document
    from extender.sync.score_facts import ScoreFacts

    platform = load_platform()
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    offline = OfflineCluster(applier, inventory)
    facts = ScoreFacts()
    facts.replace_nodes(cluster["items"])
    facts.replace_pods([])
    facts.replace_services([])
    service = ExtenderService(platform, offline, inventory=inventory, applier=applier,
                              on_new_pod=offline.admit, facts=facts)
    service.offline = offline
    service._offline_objects = parse_cluster_document(cluster)
    service.start()
    return service


def burst(n_nodes: int, pods: int, warmup: int, warm: bool = True) -> JSON:
    """Filter (exact cut on), prioritize and bind per pod of a burst; median CPU per call."""
    from extender.server.wire import decode_binding_args, decode_extender_args

    cluster = burst_cluster(n_nodes)
    service = burst_service(cluster)
    verbs, clock = service.verbs, time.thread_time_ns
    free = {item["metadata"]["name"]: 8 for item in cluster["items"]}
    order = random.Random(7)
    spent: dict[str, list[int]] = {"filter": [], "prioritize": [], "bind": [], "warm": []}
    kept = 0
    for i in range(warmup + pods):
        pod = burst_pod(i)
        names = [name for name, gpus in free.items() if gpus]  # NodeResourcesFit's pass
        order.shuffle(names)
        body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})
        started = clock()
        answer = verbs.filter(decode_extender_args(body))
        filtered = clock()
        if warm:  # what the worker does once the answer is sent (scheduling.warm)
            verbs.warm_next()
            if i >= warmup:
                spent["warm"].append(clock() - filtered)
        feasible = orjson.loads(answer.body)["NodeNames"]
        if len(feasible) == 1:  # kube-scheduler takes it: no scoring, no prioritize
            best = feasible[0]
        else:
            body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": feasible})
            before_prioritize = clock()
            priorities = verbs.prioritize(decode_extender_args(body))
            prioritized = clock()
            best = max(orjson.loads(priorities.body), key=lambda host: host["Score"])["Host"]
            if i >= warmup:
                spent["prioritize"].append(prioritized - before_prioritize)
        body = orjson.dumps({"PodName": pod["metadata"]["name"], "PodNamespace": "bench",
                             "PodUID": pod["metadata"]["uid"], "Node": best})
        before_bind = clock()
        bound = verbs.bind(decode_binding_args(body))
        ended = clock()
        if orjson.loads(bound.body)["Error"]:
            raise SystemExit(f"bind failed: {bound.body!r}")
        free[best] -= 1
        if i >= warmup:
            spent["filter"].append(filtered - started)
            spent["bind"].append(ended - before_bind)
            kept += len(feasible)
    # scores taken from the scoring done ahead (a tree without it: none)
    taken = float(service._counters().get("scores_taken_ahead", 0.0))
    service.stop()
    return {"nodes": n_nodes, "pods": pods, "kept_per_pod": round(kept / pods, 2),
            "scores_taken_ahead_per_pod": round(taken / (warmup + pods), 2),
            "prioritize_calls_per_pod": round(len(spent["prioritize"]) / pods, 2),
            **{f"{verb}_cpu_us": round(statistics.median(values) / 1000) if values else 0
               for verb, values in spent.items()}}


def _kind_steps(service: Any, names: list[str], kind: str) -> dict[str, Any]:
    """The verbs' steps for one pod of ``kind`` after its filter, as calls (``None``: the tree
    lacks that step)."""
    import numpy as np

    from extender.core.fit import fit
    from extender.kube.objects import pod_key
    from extender.scheduling.pods import decode_pod
    from extender.server.answers import encode_priorities
    from extender.server.failures import group_failures
    from extender.server.verbs import wire_scores
    from extender.server.wire import decode_extender_args

    scheduler = service.scheduler
    strategy = scheduler.scorer.strategy
    body = orjson.dumps({"Pod": bench_pod(kind, 1), "Nodes": None, "NodeNames": names})
    pod = decode_extender_args(body)["Pod"]
    outcome = scheduler.filter(pod, names)
    evaluation, request = outcome.evaluation, outcome.cycle.pod.placement
    snapshot = evaluation.snapshot
    every = np.arange(snapshot.n_nodes)
    memo = getattr(scheduler.cycles, "decoded", None)
    fits = getattr(scheduler.evaluator, "fits", None)
    _, scores = scheduler.scorer.scores_of(evaluation, request)
    return {
        "wire decode": lambda: decode_extender_args(body),
        "pod decode": lambda: decode_pod(scheduler.cycles._platform, pod, pod_key(pod), "1",
                                         snapshot.nodes),
        "pod decode (memo hit)": None if memo is None else
        lambda: memo.decode(pod, pod_key(pod), "1", snapshot.nodes),
        "fit kernel": lambda: fit(snapshot, request, every),
        "fit (kept)": None if fits is None else lambda: fits.fit(snapshot, request, every),
        "evaluate": lambda: scheduler.evaluator.evaluate(snapshot, request, names),
        "failures grouped": lambda: group_failures(evaluation, service.verbs._messages,
                                                   outcome.cycle.pod.request),
        "score": lambda: strategy.score(snapshot, request, evaluation.fit),
        "F after": None if kind == "vram" else
        lambda: strategy.frag.frag_after(snapshot, request, evaluation.fit),
        "encode priorities": lambda: encode_priorities(names, wire_scores(scores)),
    }


def steps(n_nodes: int, calls: int = 200) -> None:
    """``--steps``: each step of the verbs alone (thread CPU, median of ``calls``), on one pod
    per kind after its filter: what the memos save, step by step (a step a tree lacks is
    left out). The snapshot does not change between calls: a kept value is always current
    here, where a burst refreshes the rows its last hold changed."""
    from extender.platform import load_platform
    from extender.server.service import ExtenderService
    from extender.sync.offline import parse_cluster_document

    cluster = generate_cluster(n_nodes)
    names = [i["metadata"]["name"] for i in cluster["items"] if i["kind"] == "Node"]
    service = ExtenderService.from_cluster_objects(load_platform(),
                                                   parse_cluster_document(cluster))
    service.start()

    def cpu_us(step: Any) -> float:
        spent = []
        for _ in range(calls):
            started = time.thread_time_ns()
            step()
            spent.append(time.thread_time_ns() - started)
        return statistics.median(spent) / 1000

    for kind in KINDS:
        measured = _kind_steps(service, names, kind)
        print(f"{n_nodes:>6} {kind:<8} | " + ", ".join(
            f"{name} {cpu_us(step):.0f}" for name, step in measured.items()
            if step is not None) + " (us CPU)")
    service.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--cycles", type=int, default=300,
                        help="measured filter+prioritize cycles per pod kind (default 300)")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--output", type=Path, help="also write the rows as JSON")
    parser.add_argument("--profile", type=int, metavar="NODES",
                        help="profile in-process at this size instead")
    parser.add_argument("--in-process", action="store_true",
                        help="the verbs' CPU per call in process (no HTTP), see above")
    parser.add_argument("--tree", type=Path,
                        help="with --in-process: import the extender from this checkout")
    parser.add_argument("--steps", action="store_true",
                        help="with --in-process: each step of the verbs alone instead")
    parser.add_argument("--burst", action="store_true",
                        help="with --in-process: filter, prioritize and bind per pod of a "
                             "burst (--cycles pods), see above")
    parser.add_argument("--floor-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_server:
        run_floor_server(args.floor_server, args.threads)
        return 0
    if args.profile:
        profile(args.profile, args.cycles)
        return 0
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {host.node()}, "
          f"{host.processor() or host.machine()}, {os.cpu_count()} CPUs, "
          f"Python {host.python_version()}, {args.cycles} cycles/kind, "
          f"{args.threads} threads")
    rows: list[JSON] = []
    if args.in_process:
        if args.tree is not None:
            sys.path.insert(0, str(args.tree.resolve()))
        import extender
        print(f"# in process, extender from {Path(extender.__file__).parents[1]}")
        if args.steps:
            for size in args.sizes:
                steps(size)
            return 0
        if args.burst:
            for size in args.sizes:
                for warm in (False, True):
                    row = burst(size, args.cycles, args.warmup, warm=warm)
                    rows.append({**row, "warm": warm})
                    print(f"{size:>6} nodes, {row['pods']} pods, warm {'on ' if warm else 'off'}"
                          f", {row['kept_per_pod']} names kept per pod | filter "
                          f"{row['filter_cpu_us']} us + warm {row['warm_cpu_us']} us | "
                          f"prioritize {row['prioritize_cpu_us']} us x "
                          f"{row['prioritize_calls_per_pod']} per pod | bind "
                          f"{row['bind_cpu_us']} us (median thread CPU per call); scores"
                          f" taken ahead {row['scores_taken_ahead_per_pod']} per pod")
            if args.output:
                args.output.parent.mkdir(parents=True, exist_ok=True)
                args.output.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
            return 0
        for size in args.sizes:
            rows += in_process(size, args.cycles, args.warmup)
        for r in rows:
            print(f"{r['nodes']:>6} {r['pod']:<8} | filter {r['filter_cpu_us']:6d} us CPU | "
                  f"prioritize {r['prioritize_cpu_us']:6d} us CPU")
    else:
        for size in args.sizes:
            rows += bench_size(size, args.cycles, args.warmup, args.threads)
        print_table(rows)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
