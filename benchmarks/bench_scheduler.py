"""Pods/s of the real kube-scheduler with the extender, against the same scheduler without it.

Method (one run measures both, side by side, so machine noise hits both alike):

1. A fresh local control plane (etcd + kube-apiserver, request throttling off) per mode.
2. N fake nodes with 8 ``nvidia.com/gpu`` each (GFD-labelled T4s), then P one-GPU pods with
   ``schedulerName: gpu-scheduler``, all created while **no scheduler runs** (the burst is
   "released" by starting the scheduler).
3. ``extender`` mode: ``gpu-extender serve`` is started first and must have all N nodes in its
   inventory; the scheduler runs ``scheduler-config/gpu-scheduler-profile.yaml`` as shipped.
   ``plain`` mode: the same file with the ``extenders`` section removed (same profile, same
   ``percentageOfNodesToScore: 100``, same client qps/burst).
4. A raw watch on the pods (orjson, no client-side object decoding) stamps the moment each pod
   is first seen with ``spec.nodeName``. Throughput = (bound - 1) / (last stamp - first stamp):
   scheduler start-up and informer sync are excluded, the steady burst is what is measured.

    .venv/bin/python benchmarks/bench_scheduler.py                 # 1,000 nodes, 2,000 pods
    .venv/bin/python benchmarks/bench_scheduler.py --nodes 1000 5000 --pods 2000

Prints one line per (nodes, mode) and the ratio extender / plain per node count.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from localcluster import ExtenderSpec, LocalCluster, find_binaries  # noqa: E402
from localcluster.components import scheduler_command  # noqa: E402
from localcluster.network import free_port, tls_context, wait_until_ready  # noqa: E402
from localcluster.process import ManagedProcess  # noqa: E402
from localcluster.scheduler_config import write_scheduler_config  # noqa: E402

PROFILE = REPO_ROOT / "scheduler-config" / "gpu-scheduler-profile.yaml"
NAMESPACE = "default"
GPUS_PER_NODE = 8
UNTHROTTLED = ["--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
               "--enable-priority-and-fairness=false"]
_NODES_METRIC = re.compile(rb"^gpu_extender_nodes(?:\{[^}]*\})? ([0-9.e+]+)$", re.MULTILINE)
_VERB_SECONDS = re.compile(
    rb'^gpu_extender_request_duration_seconds_(sum|count)\{verb="(\w+)"\} ([0-9.e+-]+)$',
    re.MULTILINE)


@dataclass(frozen=True)
class Result:
    mode: str
    nodes: int
    pods: int
    bound: int
    burst_s: float
    total_s: float
    verb_ms: dict[str, float] | None = None
    """Mean time inside the extender per call, by verb (its own latency histogram)."""

    @property
    def pods_per_s(self) -> float:
        return (self.bound - 1) / self.burst_s if self.bound > 1 and self.burst_s > 0 else 0.0


def _extender() -> ExtenderSpec:
    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "extender", "serve", "--host", "127.0.0.1",
                "--port", str(port)]
    return ExtenderSpec(command, cwd=REPO_ROOT, ready_timeout_s=120.0)


def _pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"burst-{i}"},
            "spec": {"schedulerName": "gpu-scheduler",
                     "containers": [{"name": "main", "image": "registry.example/app:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def _create_all(cluster: LocalCluster, nodes: int, pods: int) -> None:
    api = cluster.api()

    def node(i: int) -> None:
        cluster.create_node(f"gpu-{i}", {"nvidia.com/gpu": GPUS_PER_NODE},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"})

    def pod(i: int) -> None:
        api.create_namespaced_pod(NAMESPACE, _pod(i))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(node, range(nodes)))
        list(pool.map(pod, range(pods)))


def _wait_extender_nodes(cluster: LocalCluster, nodes: int, timeout_s: float = 300) -> None:
    def seen() -> bool:
        with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=10) as answer:
            match = _NODES_METRIC.search(answer.read())
        return match is not None and float(match.group(1)) >= nodes
    cluster.wait_for(seen, timeout_s=timeout_s, interval_s=0.5,
                     description=f"the extender to see {nodes} nodes")


class BindClock:
    """Stamps the first moment each pod is seen bound, from one raw watch stream."""

    def __init__(self, cluster: LocalCluster) -> None:
        api = cluster.api()
        listing = api.list_namespaced_pod(NAMESPACE, _preload_content=False)
        version = orjson.loads(listing.data)["metadata"]["resourceVersion"]
        self._response = api.list_namespaced_pod(
            NAMESPACE, watch=True, resource_version=version, timeout_seconds=3600,
            allow_watch_bookmarks=False, _preload_content=False)
        self.stamps: dict[str, float] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="bind-clock", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        buffer = b""
        try:
            for chunk in self._response.stream(65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                now = time.monotonic()
                for line in lines:
                    if not line:
                        continue
                    pod = orjson.loads(line).get("object") or {}
                    name = (pod.get("metadata") or {}).get("name")
                    if (pod.get("spec") or {}).get("nodeName") and name not in self.stamps:
                        self.stamps[name] = now
        except Exception as error:  # the stream is closed under us at the end of the run
            if not self._closed:
                print(f"bench_scheduler: the pod watch failed: {error!r}", file=sys.stderr)

    def close(self) -> None:
        # Closing the response from this thread would block on the SSL socket the reader is
        # inside; the reader ends with the connection when the cluster stops.
        self._closed = True


def _scheduler_config(cluster: LocalCluster, with_extender: bool) -> Path:
    source = yaml.safe_load(PROFILE.read_text())
    if not with_extender:
        source.pop("extenders", None)
    staged = cluster.workdir / "bench-profile.yaml"
    staged.write_text(yaml.safe_dump(source, sort_keys=False))
    return write_scheduler_config(
        staged, cluster.workdir / "scheduler-config.yaml", cluster.kubeconfig("kube-scheduler"),
        f"127.0.0.1:{cluster.extender_url.rsplit(':', 1)[1]}" if with_extender else None)


def run(mode: str, nodes: int, pods: int, timeout_s: float) -> Result:
    with_extender = mode == "extender"
    binaries = find_binaries()
    with LocalCluster(None, _extender() if with_extender else None, binaries,
                      apiserver_args=UNTHROTTLED) as cluster:
        _create_all(cluster, nodes, pods)
        if with_extender:
            _wait_extender_nodes(cluster, nodes)
        clock = BindClock(cluster)
        port = free_port()
        started = time.monotonic()
        scheduler = ManagedProcess(
            "kube-scheduler", scheduler_command(
                binaries.kube_scheduler, _scheduler_config(cluster, with_extender), port, []),
            cluster.workdir / "bench-scheduler.log")
        try:
            wait_until_ready(scheduler, f"https://127.0.0.1:{port}/healthz", 60,
                             tls_context(None))
            deadline = time.monotonic() + timeout_s
            while len(clock.stamps) < pods and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            scheduler.stop()
            clock.close()
        stamps = sorted(clock.stamps.values())
        burst = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
        return Result(mode, nodes, pods, len(stamps), burst,
                      (stamps[-1] - started) if stamps else 0.0,
                      _verb_ms(cluster) if with_extender else None)


def _verb_ms(cluster: LocalCluster) -> dict[str, float]:
    with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=10) as answer:
        text = answer.read()
    totals: dict[str, dict[str, float]] = {}
    for kind, verb, value in _VERB_SECONDS.findall(text):
        totals.setdefault(verb.decode(), {})[kind.decode()] = float(value)
    return {verb: 1000 * t["sum"] / t["count"] for verb, t in sorted(totals.items())
            if t.get("count")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait for the burst to bind, per run")
    args = parser.parse_args(argv)
    print(f"# bench_scheduler: {args.pods} one-GPU pods released at once onto N nodes x "
          f"{GPUS_PER_NODE} GPUs; pods/s over the burst (first to last bind)")
    for nodes in args.nodes:
        results = {mode: run(mode, nodes, args.pods, args.timeout)
                   for mode in ("plain", "extender")}
        for result in results.values():
            print(f"nodes={nodes:5d} mode={result.mode:8s} bound={result.bound}/{result.pods} "
                  f"burst={result.burst_s:7.2f}s to_last_bind={result.total_s:7.2f}s "
                  f"pods/s={result.pods_per_s:7.1f}" + (
                      "  in-extender ms/call: " + ", ".join(
                          f"{verb} {ms:.2f}" for verb, ms in result.verb_ms.items())
                      if result.verb_ms else ""), flush=True)
        plain, ours = results["plain"].pods_per_s, results["extender"].pods_per_s
        print(f"nodes={nodes:5d} ratio extender/plain = "
              f"{ours / plain if plain else float('nan'):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
