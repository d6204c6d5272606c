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

5. ``stock`` mode (``--modes``): the same file without the extenders and without
   ``percentageOfNodesToScore`` (kube-scheduler's adaptive default), what a user compares
   us with; the client qps/burst stay as shipped, so only the scoring differs.
   ``extender-adaptive``: the extender mode with that profile (not what we ship: the extender
   then sees only the first feasible nodes kube-scheduler finds, 42 % of 1,000, 10 % of 5,000
   nodes, and cannot prefer a cheaper or better-packed GPU outside them).
   ``extender-no-events``: the extender with ``service.placementEvents: false`` (no
   ``GpuAssigned`` event per bind: one API write per pod less; the explanation and the
   ``pod placed`` log line stay).
6. ``floor`` / ``floor-events`` modes (``--modes``): the shipped profile calling
   ``benchmarks/floor_extender.py`` instead, an extender that decides nothing (filter keeps the
   first two names, as the exact cut does here; prioritize; bind = one Binding POST;
   ``floor-events`` adds one event per bind): what the extender protocol itself costs
   kube-scheduler, the API server and etcd, so ``extender`` is compared with the best any
   HTTP extender with a bind verb could do on the same machine.
7. CPU time per pod of each process (the extender with its gunicorn worker, kube-scheduler,
   kube-apiserver, etcd), from ``/proc/<pid>/stat`` between the first and the last 5 % of
   the burst (the extender's figure is user + system; its system share is printed apart,
   inside it), the share of it an idle cluster burns anyway (each process's rate over 3 s
   before the scheduler starts, times the measured window); the extender's calls per pod by
   verb, and its time per call (mean, and the bind's p50 interpolated in its latency
   histogram); the extender's CPU per pod by thread (``gpu_extender_thread_cpu_seconds``,
   scraped before kube-scheduler starts and after the burst: MainThread answers filter and
   prioritize, the pool the binds, event-writer the explanations and Events); the
   extender's context switches per pod over the same window, voluntary and involuntary
   (``/proc/<pid>/task/*/status``), and those of the worker's main thread alone (preempted by
   its own background threads unless they yield: ``runtime/background.py``).
8. The API server's census per pod (``control_plane_metrics``): its requests by verb and
   resource, and the watch events it sent, by resource.

    .venv/bin/python benchmarks/bench_scheduler.py                 # 1,000 nodes, 2,000 pods
    .venv/bin/python benchmarks/bench_scheduler.py --nodes 1000 5000 --pods 2000
    .venv/bin/python benchmarks/bench_scheduler.py --modes plain extender stock --pods 1000
    .venv/bin/python benchmarks/bench_scheduler.py --modes extender --profile /tmp/prof
    .venv/bin/python benchmarks/bench_scheduler.py --owner replicaset   # a Deployment's burst

``--event-qps Q`` runs the ``extender`` mode with ``service.eventQPS: Q`` (the pace of its
``GpuAssigned`` events while binds keep coming; the shipped default is 20). After every burst
with the extender, the run waits for the events the pace held back and prints how many were
written, how late the last one was, and what writing them cost every process per pod (CPU
spent after the burst, not inside its measured window), and how many of the pods' placement
events carry the explanation (every one should).

``--tls`` runs every extender mode as the chart's ``extender-service`` mode calls it: the
extender serves HTTPS (an ECDSA P-256 certificate from a CA made for the run) and
kube-scheduler's profile has ``enableHTTPS`` with ``tlsConfig.caFile``. kube-scheduler's
extender client keeps at most two idle connections (Go's ``DefaultMaxIdleConnsPerHost``), so
while binds overlap it opens new ones (~300 in a 1,000-pod burst here), and over TLS each costs
a full handshake. Not with ``floor`` modes (the floor serves plain HTTP).

``--extender-core`` splits the CPUs (``benchmarks/core_split.py``): the control plane,
kube-scheduler and this driver on the first, the extender on the others, in every mode (plain's
second CPU idles). On a 2-vCPU machine everything otherwise shares both cores, so each
millisecond of the extender's CPU is one the API server and kube-scheduler wait for; in a
cluster the extender has its own pod and node. A different measurement, not the default one.

``--base-tree DIR`` adds the mode ``base``: the extender mode with the extender run from another
checkout (``git worktree add --detach DIR <commit>``), so a change and its base are measured
side by side in one invocation (same load, same control plane binaries).

``--apiserver-profile DIR`` saves the API server's Go CPU profile for 5 s of each burst
(``DIR/<mode>-<nodes>.apiserver.pprof``; ``go tool pprof -top -cum <kube-apiserver binary> FILE``),
``--scheduler-profile DIR`` kube-scheduler's (``DIR/<mode>-<nodes>.scheduler.pprof``; its
``/debug/pprof/`` is then served without authentication, as its ``/metrics`` is here).

``--pace R`` measures latency instead of throughput: the nodes are created first, then the
pods at R per second once kube-scheduler runs (``benchmarks/paced_pods.py``), so at an R below
what the slowest mode sustains nothing saturates; each run prints the pods' created -> bound
milliseconds (p50, p90, p99; the first 5 % of the pods, which wait for the first cycles, left
out), beside the bind's p50 in the extender and the API server's own Binding. A burst
saturates every process, and its latencies are mostly waits for a core. With ``--pace`` the CPU
per pod includes creating the pods, and the idle cluster's cost per second is paid over the
longer run; pods/s is the pace, so no ratio is printed. The API server's latency
histograms start at a 5 ms bucket: a p50 under 5 ms is interpolated inside it, so read their
means.

``--profile DIR`` samples the extender's worker with py-spy (``pip install py-spy``) during
the burst: ``DIR/<mode>-<nodes>.txt`` (collapsed stacks) and a summary printed by
``benchmarks/profile_summary.py``.

Prints one line per (nodes, mode) run (with kube-scheduler's own time per pod, from its
``/metrics``), then each extender run's ratio to the mean pods/s of
the invocation's plain runs (and stock's): ``--modes plain extender extender plain`` gives two
ratios, each against both plain runs. Last, issue 22's targets judged on the ``extender`` runs,
each beside the same figure from a reference without our work (``benchmarks/targets.py``):
``--modes plain extender floor-events stock extender plain`` judges all four.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.control_plane_metrics import ControlPlaneMetrics, scheduler_line  # noqa: E402
from benchmarks.core_split import CoreSplit, CoreSplitError, pin_threads  # noqa: E402
from benchmarks.paced_pods import PacedCreator, latency_ms  # noqa: E402
from benchmarks.targets import target_lines  # noqa: E402
from localcluster import ExtenderSpec, LocalCluster, find_binaries  # noqa: E402
from localcluster.components import scheduler_command  # noqa: E402
from localcluster.network import free_port, tls_context, wait_until_ready  # noqa: E402
from localcluster.pki import CertKeyPair, generate_pki, issue_from_ca  # noqa: E402
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
_VERB_CPU = re.compile(
    rb'^gpu_extender_request_cpu_seconds_total\{verb="(\w+)"\} ([0-9.e+-]+)$', re.MULTILINE)
_THREAD_CPU = re.compile(
    rb'^gpu_extender_thread_cpu_seconds_total\{thread="([^"]+)"\} ([0-9.e+-]+)$', re.MULTILINE)
_VERB_BUCKET = re.compile(
    rb'^gpu_extender_request_duration_seconds_bucket\{le="([0-9.e+-]+|\+Inf)",verb="(\w+)"\}'
    rb' ([0-9.e+-]+)$', re.MULTILINE)
_COUNTER = re.compile(rb"^gpu_extender_(\w+)_total ([0-9.e+-]+)$", re.MULTILINE)
_CUT = re.compile(rb'^gpu_extender_(score_cut(?:_nodes)?)_total\{\w+="(\w+)"\} ([0-9.e+-]+)$',
                  re.MULTILINE)
"""The exact cut's counters by reason / fate (docs/score-cut.md), where they are not 0."""
MODES = ("plain", "extender", "base", "stock", "floor", "floor-events", "extender-adaptive",
         "extender-no-events")
EXTENDER_MODES = ("extender", "base", "extender-adaptive", "extender-no-events")
NO_EVENTS_CONFIG = REPO_ROOT / "tests" / "e2e" / "data" / "no-placement-events.yaml"
"""``extender-no-events``: the platform config with ``service.placementEvents: false``."""
ADAPTIVE_MODES = ("stock", "extender-adaptive")
"""Modes whose profile drops ``percentageOfNodesToScore`` (kube-scheduler's adaptive
default): kube-scheduler stops filtering once it has found that share of feasible nodes, so
the extender is asked about a subset only."""
FLOOR_MODES = ("floor", "floor-events")
"""``benchmarks/floor_extender.py``: the protocol's cost without any decision (no watch, no
metrics; ``floor-events`` also writes one event per bind)."""
CALLED_MODES = EXTENDER_MODES + FLOOR_MODES
"""The modes whose kube-scheduler calls an extender (the shipped profile's extenders)."""
TLS_SERVER_NAME = "gpu-extender.kube-system.svc"
"""``--tls``: the name kube-scheduler verifies (the chart's Service name)."""
TICKS = os.sysconf("SC_CLK_TCK")
PACE_WARMUP = 0.05
"""``--pace``: the share of the pods (the first created) left out of the latency quantiles, as
the first and last 5 % are left out of the CPU per pod."""
SYSTEM_SHARE = "extender (system)"
"""The extender's kernel time: a part of its "extender" figure (user + system), not added."""


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
    bind_p50_ms: float | None = None
    calls_per_pod: dict[str, float] | None = None
    """Extender calls per bound pod, by verb."""
    cpu_ms_per_pod: dict[str, float] | None = None
    """CPU milliseconds per pod over the burst, by process."""
    counters: dict[str, float] | None = None
    load: tuple[float, float] = (0.0, 0.0)
    """Load average (1 min) before and after the run."""
    background_ms_per_pod: dict[str, float] | None = None
    """The share of ``cpu_ms_per_pod`` that the idle cluster spends anyway (kwok's node
    heartbeats, etcd's periodic commits, the extender's idle threads): the rate measured for
    ``IDLE_WINDOW_S`` before the scheduler starts, times the burst's measured window, per pod.
    A slower burst pays more of it per pod, so it is printed apart, with the total net of it."""
    verb_cpu_ms: dict[str, float] | None = None
    """Mean CPU of the answering thread per call, by verb (the rest of ``verb_ms`` is
    waiting: for the GIL, for a core)."""
    thread_cpu_ms_per_pod: dict[str, float] | None = None
    """The extender's CPU milliseconds per bound pod by thread (its
    ``gpu_extender_thread_cpu_seconds``), over the whole burst: scraped right before
    kube-scheduler starts and after the last bind (a scrape inside the burst would charge it
    the per-GPU series)."""
    paced: dict[str, float] | None = None
    """``--pace``: the pace asked and the pace the pods were created at (pods per second), and
    their created -> bound milliseconds at ``paced_pods.QUANTILES`` (the first
    ``PACE_WARMUP`` of the pods left out)."""
    apiserver_binding_ms: float | None = None
    """The API server's own time per ``POST pods/binding`` over the run, mean (its
    histogram's p50 under 5 ms would be an interpolation)."""

    @property
    def pods_per_s(self) -> float:
        return (self.bound - 1) / self.burst_s if self.bound > 1 and self.burst_s > 0 else 0.0


@dataclass(frozen=True)
class ServingTls:
    """``--tls``: the CA and the extender's serving certificate, made for one run."""

    ca: Path
    serving: CertKeyPair

    @classmethod
    def make(cls, directory: Path) -> ServingTls:
        pki = generate_pki(directory / "pki")
        serving = issue_from_ca(directory / "tls", "extender", TLS_SERVER_NAME, server=True,
                                dns_names=(TLS_SERVER_NAME,), ips=("127.0.0.1",),
                                ca_dir=directory / "pki")
        return cls(pki.ca_cert, serving)

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.check_hostname = False  # the bench dials 127.0.0.1
        return context


def _extender(tree: Path = REPO_ROOT, config: Path | None = None,
              tls: ServingTls | None = None) -> ExtenderSpec:
    """``tree``: the checkout the extender runs from (``python -m extender`` in it);
    ``config``: its platform config (the shipped defaults without one); ``tls``: serve
    HTTPS with that certificate."""
    def command(port: int) -> list[str]:
        serving = [] if tls is None else [
            "--tls-cert-file", str(tls.serving.cert),
            "--tls-private-key-file", str(tls.serving.key)]
        return [sys.executable, "-m", "extender", "serve", "--host", "127.0.0.1",
                "--port", str(port), *(["--config", str(config)] if config else []),
                *serving]
    return ExtenderSpec(command, cwd=tree, ready_timeout_s=120.0,
                        ready_context=None if tls is None else tls.client_context())


def _floor(events: bool) -> ExtenderSpec:
    def command(port: int) -> list[str]:
        return [sys.executable, str(REPO_ROOT / "benchmarks" / "floor_extender.py"),
                "--port", str(port), *(["--events"] if events else [])]
    return ExtenderSpec(command, cwd=REPO_ROOT, ready_timeout_s=60.0)


def _pod(i: int, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"burst-{i}", "labels": {"app": "burst"}}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"schedulerName": "gpu-scheduler",
                     "containers": [{"name": "main", "image": "registry.example/app:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def _replica_set(cluster: LocalCluster) -> dict[str, Any]:
    """A ReplicaSet selecting the burst's pods (no controller manager acts on it), and the
    owner reference of its pods: kube-scheduler's lister finds it, so PodTopologySpread's
    system default constraints score every pod, as for a Deployment's replicas."""
    from kubernetes import client

    created = client.AppsV1Api(cluster.api_client()).create_namespaced_replica_set(NAMESPACE, {
        "metadata": {"name": "burst"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "burst"}},
                 "template": {"metadata": {"labels": {"app": "burst"}},
                              "spec": {"containers": [{"name": "main",
                                                       "image": "registry.example/app:1"}]}}}})
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "burst",
            "uid": created.metadata.uid, "controller": True}


def _create_all(cluster: LocalCluster, nodes: int, pods: int, owner: str = "none"
                ) -> dict[str, Any] | None:
    """The nodes, then ``pods`` pods (0 with ``--pace``: they are created during the run);
    returns the pods' owner reference, if any."""
    api = cluster.api()
    reference = _replica_set(cluster) if owner == "replicaset" else None

    def node(i: int) -> None:
        cluster.create_node(f"gpu-{i}", {"nvidia.com/gpu": GPUS_PER_NODE},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"})

    def pod(i: int) -> None:
        api.create_namespaced_pod(NAMESPACE, _pod(i, reference))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(node, range(nodes)))
        list(pool.map(pod, range(pods)))
    return reference


def _paced_pods(cluster: LocalCluster, pods: int, pace: float,
                reference: dict[str, Any] | None) -> PacedCreator:
    api = cluster.api()
    by_name = {f"burst-{i}": i for i in range(pods)}

    def create(name: str) -> None:
        api.create_namespaced_pod(NAMESPACE, _pod(by_name[name], reference))

    return PacedCreator(create, list(by_name), pace=pace)


def _wait_extender_nodes(cluster: LocalCluster, nodes: int, timeout_s: float = 300,
                        context: ssl.SSLContext | None = None) -> None:
    def seen() -> bool:
        with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=10,
                                    context=context) as answer:
            match = _NODES_METRIC.search(answer.read())
        return match is not None and float(match.group(1)) >= nodes
    cluster.wait_for(seen, timeout_s=timeout_s, interval_s=0.5,
                     description=f"the extender to see {nodes} nodes")


class BindClock:
    """Stamps the first moment each pod is seen bound, from a raw watch stream that renews
    itself: when the stream ends or fails (the API server closes watches under load), it
    watches again from the last resourceVersion seen, or re-lists (stamping the pods the list
    shows bound and the stamps lack) when that version is gone, so every bind is counted."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._api = cluster.api()
        self.stamps: dict[str, float] = {}
        self.renewals = 0
        """Watches opened again after the first one ended."""
        self._closed = False
        self._version = self._list()
        self._thread = threading.Thread(target=self._run, name="bind-clock", daemon=True)
        self._thread.start()

    def _list(self) -> str:
        listing = orjson.loads(self._api.list_namespaced_pod(
            NAMESPACE, _preload_content=False).data)
        now = time.monotonic()
        for pod in listing.get("items") or []:
            self._stamp(pod, now)
        return str(listing["metadata"]["resourceVersion"])

    def _stamp(self, pod: dict[str, Any], now: float) -> None:
        name = str((pod.get("metadata") or {}).get("name"))
        if (pod.get("spec") or {}).get("nodeName") and name not in self.stamps:
            self.stamps[name] = now

    def _run(self) -> None:
        while not self._closed:
            try:
                self._watch()
            except Exception as error:  # the stream is closed under us at the end of the run
                if self._closed:
                    return
                print(f"bench_scheduler: the pod watch failed ({error!r}); renewing",
                      file=sys.stderr)
                time.sleep(0.2)
            if self._closed:
                return
            self.renewals += 1

    def _watch(self) -> None:
        response = self._api.list_namespaced_pod(
            NAMESPACE, watch=True, resource_version=self._version, timeout_seconds=3600,
            allow_watch_bookmarks=True, _preload_content=False)
        buffer = b""
        for chunk in response.stream(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            now = time.monotonic()
            for line in lines:
                if not line:
                    continue
                event = orjson.loads(line)
                pod = event.get("object") or {}
                if event.get("type") == "ERROR":  # 410: the version is gone
                    self._version = self._list()
                    return
                version = (pod.get("metadata") or {}).get("resourceVersion")
                if version:
                    self._version = str(version)
                self._stamp(pod, now)

    def close(self) -> None:
        # Closing the response from this thread would block on the SSL socket the reader is
        # inside; the reader ends with the connection when the cluster stops.
        self._closed = True


def _scheduler_config(cluster: LocalCluster, mode: str, tls: ServingTls | None = None) -> Path:
    with_extender = mode in CALLED_MODES
    source = yaml.safe_load(PROFILE.read_text())
    if not with_extender:
        source.pop("extenders", None)
    elif tls is not None:  # the chart's extender-service variant (the harness sets host:port)
        for extender in source["extenders"]:
            extender["urlPrefix"] = extender["urlPrefix"].replace("http://", "https://")
            extender["enableHTTPS"] = True
            extender["tlsConfig"] = {"caFile": str(tls.ca), "serverName": TLS_SERVER_NAME}
    if mode in ADAPTIVE_MODES:
        for profile in source.get("profiles") or []:
            profile.pop("percentageOfNodesToScore", None)
    staged = cluster.workdir / "bench-profile.yaml"
    staged.write_text(yaml.safe_dump(source, sort_keys=False))
    return write_scheduler_config(
        staged, cluster.workdir / "scheduler-config.yaml", cluster.kubeconfig("kube-scheduler"),
        f"127.0.0.1:{cluster.extender_url.rsplit(':', 1)[1]}" if with_extender else None)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def _cpu_ticks(pid: int, *, system_only: bool = False) -> int:
    """utime + stime of one process (clock ticks); ``system_only``: stime alone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[12]) if system_only else int(fields[11]) + int(fields[12])


def _subtree(pid: int, tree: dict[int, list[int]]) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(tree.get(current, []))
    return out


def _cpu_by_process(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds of each named process and everything it forked."""
    tree = _children()
    out = {name: sum(_cpu_ticks(p) for p in _subtree(pid, tree)) / TICKS
           for name, pid in roots.items()}
    if "extender" in roots:  # the kernel's share (sockets, wake-ups): no profiler sees it
        out[SYSTEM_SHARE] = sum(_cpu_ticks(p, system_only=True)
                                for p in _subtree(roots["extender"], tree)) / TICKS
    return out


def _switches(root: int | None) -> tuple[int, int, int, int]:
    """Context switches of every thread of ``root`` and what it forked: (voluntary,
    involuntary, and the same of the threads whose id is their process's: a gunicorn
    worker's main thread, the one that answers filter inline)."""
    totals = [0, 0, 0, 0]
    for pid in _subtree(root, _children()) if root is not None else []:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                fields = dict(line.partition(":")[::2]
                              for line in (task / "status").read_text().splitlines())
            except OSError:
                continue
            voluntary = int(fields.get("voluntary_ctxt_switches", 0))
            involuntary = int(fields.get("nonvoluntary_ctxt_switches", 0))
            totals[0] += voluntary
            totals[1] += involuntary
            if task.name == str(pid):  # the process's main thread
                totals[2] += voluntary
                totals[3] += involuntary
    return (totals[0], totals[1], totals[2], totals[3])


def _roots(cluster: LocalCluster, scheduler: ManagedProcess | None) -> dict[str, int]:
    """The control plane's processes are children of this one; named by their command."""
    roots = {"kube-scheduler": scheduler.pid} if scheduler is not None else {}
    for pid in _children().get(os.getpid(), []):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm in ("etcd", "kube-apiserver"):
            roots[comm] = pid
    if cluster.extender_pid is not None:
        roots["extender"] = cluster.extender_pid
    return roots


IDLE_WINDOW_S = 3.0


def _idle_cpu_rate(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds per second of each process while nothing is scheduled."""
    first, started = _cpu_by_process(roots), time.monotonic()
    time.sleep(IDLE_WINDOW_S)
    last, elapsed = _cpu_by_process(roots), time.monotonic() - started
    return {name: max(0.0, last[name] - first.get(name, 0.0)) / elapsed for name in last}


def _worker_pid(master: int) -> int | None:
    """gunicorn's one worker: the master's only descendant that forked nothing."""
    tree = _children()
    leaves = [pid for pid in _subtree(master, tree)[1:] if not tree.get(pid)]
    return leaves[0] if len(leaves) == 1 else None


def run(mode: str, nodes: int, pods: int, timeout_s: float,
        profile: Path | None = None, *, base_tree: Path | None = None,
        apiserver_profile: Path | None = None, scheduler_profile: Path | None = None,
        owner: str = "none", event_qps: float | None = None, tls: ServingTls | None = None,
        split: CoreSplit | None = None, pace: float | None = None) -> Result:
    """``tls``: the extender modes serve HTTPS with it (``--tls``); ``split``: the
    control plane and the extender on CPUs of their own (``--extender-core``); ``pace``: the
    pods are created at that many per second once kube-scheduler runs (``--pace``)."""
    with split.driver_on_control_plane() if split is not None else nullcontext():
        return _run(mode, nodes, pods, timeout_s, profile, base_tree=base_tree,
                    apiserver_profile=apiserver_profile, scheduler_profile=scheduler_profile,
                    owner=owner, event_qps=event_qps, tls=tls,
                    extender_cpus=split.extender if split is not None else None, pace=pace)


def _run(mode: str, nodes: int, pods: int, timeout_s: float, profile: Path | None, *,
         base_tree: Path | None, apiserver_profile: Path | None,
         scheduler_profile: Path | None, owner: str, event_qps: float | None,
         tls: ServingTls | None,
         extender_cpus: frozenset[int] | None = None, pace: float | None = None) -> Result:
    with_extender = mode in EXTENDER_MODES
    tls = tls if with_extender else None
    context = None if tls is None else tls.client_context()
    tree = base_tree if mode == "base" and base_tree is not None else REPO_ROOT
    binaries = find_binaries()
    load_before = os.getloadavg()[0]
    config = NO_EVENTS_CONFIG if mode == "extender-no-events" else None
    if mode == "extender" and event_qps is not None:
        config = _paced_config(event_qps)
    spec = (_extender(tree, config, tls) if with_extender else
            _floor(mode == "floor-events") if mode in FLOOR_MODES else None)
    with LocalCluster(None, spec, binaries, apiserver_args=UNTHROTTLED) as cluster:
        if extender_cpus is not None and cluster.extender_pid is not None:
            pin_threads(_subtree(cluster.extender_pid, _children()), extender_cpus)
        reference = _create_all(cluster, nodes, 0 if pace else pods, owner)
        if with_extender:
            _wait_extender_nodes(cluster, nodes, context=context)
        clock = BindClock(cluster)
        idle = _idle_cpu_rate(_roots(cluster, None))
        threads_before = _threads_at_rest(cluster, context) if with_extender else {}
        control_before = ControlPlaneMetrics.scrape(cluster)
        port = free_port()
        started = time.monotonic()
        scheduler = ManagedProcess(
            "kube-scheduler", scheduler_command(
                binaries.kube_scheduler, _scheduler_config(cluster, mode, tls), port,
                [] if scheduler_profile is None else [SCHEDULER_PPROF_ALLOWED]),
            cluster.workdir / "bench-scheduler.log")
        roots = _roots(cluster, scheduler)
        spy: subprocess.Popen[bytes] | None = None
        pprofs: list[threading.Thread] = []
        cpu_first: tuple[int, dict[str, float], float] | None = None
        switches_first = switches_last = (0, (0, 0, 0, 0))
        cpu_last: tuple[int, dict[str, float], float] | None = None
        creator: PacedCreator | None = None
        try:
            wait_until_ready(scheduler, f"https://127.0.0.1:{port}/healthz", 60,
                             tls_context(None))
            if pace:
                creator = _paced_pods(cluster, pods, pace, reference)
            deadline = time.monotonic() + timeout_s
            while len(clock.stamps) < pods and time.monotonic() < deadline:
                bound = len(clock.stamps)
                if cpu_first is None and bound >= pods // 20:
                    cpu_first = (bound, _cpu_by_process(roots), time.monotonic())
                    switches_first = (bound, _switches(roots.get("extender")))
                    if profile is not None and with_extender:
                        spy = _start_profiler(cluster, profile, f"{mode}-{nodes}")
                    if apiserver_profile is not None:
                        pprofs.append(threading.Thread(
                            target=_apiserver_pprof, name="apiserver-pprof", args=(
                                cluster, apiserver_profile / f"{mode}-{nodes}.apiserver.pprof")))
                    if scheduler_profile is not None:
                        pprofs.append(threading.Thread(
                            target=_scheduler_pprof, name="scheduler-pprof", args=(
                                port, scheduler_profile / f"{mode}-{nodes}.scheduler.pprof")))
                    for pprof in pprofs:
                        pprof.start()
                if bound <= pods - pods // 20:
                    cpu_last = (bound, _cpu_by_process(roots), time.monotonic())
                    switches_last = (bound, _switches(roots.get("extender")))
                time.sleep(0.1)
            print(f"nodes={nodes:5d} mode={mode:8s} {scheduler_line(port)}", flush=True)
        finally:
            if creator is not None:
                creator.stop()
            if spy is not None:  # py-spy writes its output on SIGINT (not on SIGTERM)
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
            for pprof in pprofs:
                pprof.join(GO_PROFILE_S + 60)
            scheduler.stop()
            clock.close()
        paced = None
        if creator is not None:
            if creator.failed:
                print(f"bench_scheduler: {len(creator.failed)} paced creates failed, e.g. "
                      f"{next(iter(creator.failed.items()))}", file=sys.stderr)
            paced = {"asked": pace or 0.0, "created": creator.created_pace()} | latency_ms(
                creator.steady(PACE_WARMUP), clock.stamps)
        if clock.renewals:
            print(f"bench_scheduler: the pod watch was renewed {clock.renewals} times",
                  file=sys.stderr)
        stamps = sorted(clock.stamps.values())
        burst = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
        cpu = background = None
        if cpu_first is not None and cpu_last is not None and cpu_last[0] > cpu_first[0]:
            done = cpu_last[0] - cpu_first[0]
            cpu = {name: 1000 * (cpu_last[1][name] - cpu_first[1].get(name, 0.0)) / done
                   for name in cpu_last[1]}
            window = cpu_last[2] - cpu_first[2]
            background = {name: 1000 * rate * window / done for name, rate in idle.items()}
        metrics = _metrics(cluster, context) if with_extender else None
        threads = None
        if metrics is not None and stamps:
            threads = {name: 1000 * (seconds - threads_before.get(name, 0.0)) / len(stamps)
                       for name, seconds in _thread_cpu(metrics).items()}
        control = ControlPlaneMetrics.scrape(cluster)
        delta = control.since(control_before) if control else None
        done_switching = switches_last[0] - switches_first[0]
        if with_extender and done_switching > 0:
            per_pod = [(last - first) / done_switching for first, last
                       in zip(switches_first[1], switches_last[1], strict=True)]
            print(f"nodes={nodes:5d} mode={mode:8s} extender context switches per pod: "
                  f"voluntary {per_pod[0]:.1f}, involuntary {per_pod[1]:.1f} (the workers' "
                  f"main threads: {per_pod[2]:.1f}, {per_pod[3]:.1f})", flush=True)
        if with_extender and stamps:  # after every figure of the burst is read
            _events_after_burst(cluster, mode, nodes, len(stamps), stamps[-1], context=context)
        print(f"nodes={nodes:5d} mode={mode:8s} " + (
            delta.line() if delta else "control plane: no metrics"), flush=True)
        if delta is not None:
            print(f"nodes={nodes:5d} mode={mode:8s} {delta.census_line(len(clock.stamps))}",
                  flush=True)
        return Result(mode, nodes, pods, len(stamps), burst,
                      (stamps[-1] - started) if stamps else 0.0,
                      _verb_ms(metrics) if metrics else None,
                      _p50_ms(metrics, "bind") if metrics else None,
                      _calls_per_pod(metrics, len(stamps)) if metrics else None,
                      cpu, _counters(metrics) if metrics else None,
                      (load_before, os.getloadavg()[0]), background,
                      _verb_cpu_ms(metrics) if metrics else None, threads or None, paced,
                      delta.histograms["apiserver binding"].mean_ms() if delta else None)


def _paced_config(qps: float) -> Path:
    """A platform config with ``service.eventQPS: qps`` (the rest the defaults)."""
    path = Path(tempfile.mkdtemp(prefix="bench-events-")) / "paced-events.yaml"
    path.write_text("apiVersion: gpu-extender.io/v1alpha1\nkind: PlatformConfig\n"
                    f"service:\n  eventQPS: {qps}\n")
    return path


EVENTS_DRAIN_S = 120.0


def _events_after_burst(cluster: LocalCluster, mode: str, nodes: int, bound: int,
                        last_bind: float, *, context: ssl.SSLContext | None = None) -> None:
    """Wait until the extender has written (or given up on) an event for every bound pod,
    and print how late the last one was (to the next 0.5 s poll) and what writing them cost
    after the burst (the extender's figure includes those polls of its /metrics)."""
    roots = _roots(cluster, None)
    before = _cpu_by_process(roots)
    started = time.monotonic()
    counters: dict[str, float] = {}
    while time.monotonic() - started < EVENTS_DRAIN_S:
        counters = _counters(_metrics(cluster, context))
        settled = sum(counters.get(f"events_{name}", 0.0)
                      for name in ("written", "aggregated", "dropped", "failed", "unwritten"))
        if settled >= bound:
            break
        time.sleep(0.5)  # a scrape of 1,000 nodes' per-GPU series costs the extender too
    late = time.monotonic() - last_bind
    after = _cpu_by_process(roots)
    spent = {name: 1000 * (after[name] - before.get(name, 0.0)) / bound
             for name in after if name != SYSTEM_SHARE}
    count = {name: counters.get(f"events_{name}", 0.0)
             for name in ("written", "deferred", "dropped", "failed")}
    print(f"nodes={nodes:5d} mode={mode:8s} events after the burst: "
          f"written {count['written']:.0f} of {bound} bound (held back "
          f"{count['deferred']:.0f}, dropped {count['dropped']:.0f}, failed "
          f"{count['failed']:.0f}), all settled {late:.1f} s after the last bind; "
          "CPU ms per pod spent after the burst: "
          + ", ".join(f"{name} {value:.2f}" for name, value in sorted(spent.items()))
          + f", all {sum(spent.values()):.2f}", flush=True)
    explained, placed = _explained_events(cluster)
    print(f"nodes={nodes:5d} mode={mode:8s} placement events with the explanation: "
          f"{explained} of {placed}", flush=True)


def _explained_events(cluster: LocalCluster) -> tuple[int, int]:
    """(placement events whose message gives the reason, placement events): a ``GpuAssigned``
    message is ``assigned GPU ... on node N`` and, where the placement was explained, ``: why,
    ...`` after it (``scheduling/explain.py``, ``event_message``)."""
    events = cluster.api().list_namespaced_event(
        NAMESPACE, field_selector="reason=GpuAssigned").items
    placed = [event.message or "" for event in events]
    return sum(1 for message in placed if ": " in message), len(placed)


def _start_profiler(cluster: LocalCluster, directory: Path, name: str
                    ) -> subprocess.Popen[bytes] | None:
    master = cluster.extender_pid
    worker = _worker_pid(master) if master is not None else None
    if worker is None:
        print("bench_scheduler: no extender worker to profile", file=sys.stderr)
        return None
    directory.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).with_name("py-spy")
    return subprocess.Popen(
        [str(spy), "record", "--pid", str(worker), "--rate", "250", "--threads", "--gil",
         "--format", "raw", "--output", str(directory / f"{name}.txt"),
         "--nonblocking"], stdout=subprocess.DEVNULL,
        stderr=(directory / f"py-spy-{name}.log").open("wb"))


GO_PROFILE_S = 5
"""Seconds of the burst each Go CPU profile covers (``--apiserver-profile``,
``--scheduler-profile``)."""


def _apiserver_pprof(cluster: LocalCluster, path: Path) -> None:
    """The API server's Go CPU profile for ``GO_PROFILE_S`` seconds of the burst
    (``go tool pprof -top kube-apiserver PATH``); a failure is reported, never raised."""
    try:
        answer = cluster.api_client().call_api(
            "/debug/pprof/profile", "GET", query_params=[("seconds", GO_PROFILE_S)],
            _preload_content=False, auth_settings=["BearerToken"],
            _request_timeout=GO_PROFILE_S + 30)
        response = answer[0] if isinstance(answer, tuple) else answer
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(response.data)
    except Exception as exc:  # a benchmark's extra: never fail the run for it
        print(f"bench_scheduler: no API server profile: {exc}", file=sys.stderr)


SCHEDULER_PPROF_ALLOWED = "--authorization-always-allow-paths=/debug/pprof/*"
"""``--scheduler-profile``: kube-scheduler's profiles served without authentication too (it
has no delegated authentication here). A list flag given twice: pflag appends the second to
the first (``scheduler_command``'s health and metrics paths stay)."""


def _scheduler_pprof(port: int, path: Path) -> None:
    """kube-scheduler's Go CPU profile for ``GO_PROFILE_S`` seconds of the burst
    (``go tool pprof -top kube-scheduler PATH``); a failure is reported, never raised."""
    try:
        url = f"https://127.0.0.1:{port}/debug/pprof/profile?seconds={GO_PROFILE_S}"
        with urllib.request.urlopen(url, timeout=GO_PROFILE_S + 30,
                                    context=tls_context(None)) as answer:
            data: bytes = answer.read()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except Exception as exc:  # a benchmark's extra: never fail the run for it
        print(f"bench_scheduler: no kube-scheduler profile: {exc}", file=sys.stderr)


def _metrics(cluster: LocalCluster, context: ssl.SSLContext | None = None) -> bytes:
    # one scrape: at 5,000 nodes the per-GPU series make it slow on a loaded machine
    with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=300,
                                context=context) as answer:
        data: bytes = answer.read()
    return data


def _verb_ms(text: bytes) -> dict[str, float]:
    totals: dict[str, dict[str, float]] = {}
    for kind, verb, value in _VERB_SECONDS.findall(text):
        totals.setdefault(verb.decode(), {})[kind.decode()] = float(value)
    return {verb: 1000 * t["sum"] / t["count"] for verb, t in sorted(totals.items())
            if t.get("count")}


def _threads_at_rest(cluster: LocalCluster, context: ssl.SSLContext | None = None
                     ) -> dict[str, float]:
    """The extender's CPU seconds by thread as the burst starts. A scrape reads them as it
    starts, and the rest of it (the per-GPU series: ~1 ms of the pool's CPU per pod of a
    1,000-pod burst at 1,000 nodes) would count as the burst's: two scrapes, and the first
    one's cost added to the second's reading."""
    first = _thread_cpu(_metrics(cluster, context))
    second = _thread_cpu(_metrics(cluster, context))
    return {name: 2 * seconds - first.get(name, seconds) for name, seconds in second.items()}


def _thread_cpu(text: bytes) -> dict[str, float]:
    """CPU seconds by thread name (empty from a tree without the family)."""
    return {name.decode(): float(seconds) for name, seconds in _THREAD_CPU.findall(text)}


def _verb_cpu_ms(text: bytes) -> dict[str, float]:
    counts = {v.decode(): float(c) for k, v, c in _VERB_SECONDS.findall(text) if k == b"count"}
    return {verb.decode(): 1000 * float(seconds) / counts[verb.decode()]
            for verb, seconds in sorted(_VERB_CPU.findall(text)) if counts.get(verb.decode())}


def _calls_per_pod(text: bytes, bound: int) -> dict[str, float]:
    counts = {verb: t for verb, t in ((v.decode(), float(c)) for k, v, c in
                                      _VERB_SECONDS.findall(text) if k == b"count")}
    return {verb: count / bound for verb, count in sorted(counts.items())} if bound else {}


def _p50_ms(text: bytes, verb: str) -> float | None:
    """The median, linearly interpolated inside its histogram bucket."""
    buckets = sorted((float("inf") if le == b"+Inf" else float(le), float(count))
                     for le, v, count in _VERB_BUCKET.findall(text) if v.decode() == verb)
    if not buckets or buckets[-1][1] == 0:
        return None
    half, lower, below = buckets[-1][1] / 2, 0.0, 0.0
    for upper, count in buckets:
        if count >= half:
            if upper == float("inf"):
                return 1000 * lower
            return 1000 * (lower + (upper - lower) * (half - below) / max(count - below, 1))
        lower, below = upper, count
    return None


def _counters(text: bytes) -> dict[str, float]:
    counters = {name.decode(): float(value) for name, value in _COUNTER.findall(text)}
    return counters | {f"{name.decode()}{{{label.decode()}}}": float(value)
                       for name, label, value in _CUT.findall(text) if float(value)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["plain", "extender"])
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait for the burst to bind, per run")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="py-spy the extender's worker during the burst (raw stacks)")
    parser.add_argument("--apiserver-profile", type=Path, metavar="DIR",
                        help="the API server's Go CPU profile for 5 s of each burst "
                             "(DIR/<mode>-<nodes>.apiserver.pprof)")
    parser.add_argument("--scheduler-profile", type=Path, metavar="DIR",
                        help="kube-scheduler's Go CPU profile for 5 s of each burst "
                             "(DIR/<mode>-<nodes>.scheduler.pprof)")
    parser.add_argument("--base-tree", type=Path, metavar="DIR",
                        help="mode base: the extender run from this checkout")
    parser.add_argument("--event-qps", type=float, metavar="Q",
                        help="run the extender mode with service.eventQPS Q (default: the "
                             "shipped 20)")
    parser.add_argument("--tls", action="store_true",
                        help="the extender modes serve HTTPS and kube-scheduler calls them "
                             "with enableHTTPS (the chart's extender-service mode)")
    parser.add_argument("--extender-core", action="store_true",
                        help="the control plane, kube-scheduler and this driver on the first "
                             "CPU, the extender on the others (every mode: plain's second CPU "
                             "idles): the extender with a core of its own, as in a cluster")
    parser.add_argument("--owner", choices=("none", "replicaset"), default="none",
                        help="replicaset: the pods are a ReplicaSet's, as a Deployment's are "
                             "(PodTopologySpread's system defaults then score them)")
    parser.add_argument("--pace", type=float, metavar="PODS_PER_S",
                        help="create the pods at this pace once kube-scheduler runs, instead "
                             "of all before it starts: latencies at a load below saturation "
                             "(created -> bound, the bind's, the API server's Binding); pods/s "
                             "is then the pace, and no ratio is printed")
    args = parser.parse_args(argv)
    if args.pace is not None and not 0 < args.pace < float("inf"):
        parser.error(f"--pace: {args.pace!r} pods per second; a positive number is accepted")
    if "base" in args.modes and args.base_tree is None:
        parser.error("--modes base needs --base-tree DIR")
    if args.tls and set(args.modes) & set(FLOOR_MODES):
        parser.error("--tls: the floor modes serve plain HTTP only")
    print(f"# bench_scheduler: {args.pods} one-GPU pods "
          + (f"created at {args.pace:g} per second while kube-scheduler runs"
             if args.pace else "released at once")
          + f" onto N nodes x {GPUS_PER_NODE} GPUs; pods/s over the burst (first to last bind)"
          + ("; the pods are a ReplicaSet's" if args.owner == "replicaset" else "")
          + (f"; extender mode: service.eventQPS {args.event_qps:g}"
             if args.event_qps is not None else "")
          + ("; the extender serves HTTPS (--tls)" if args.tls else ""))
    split = None
    if args.extender_core:
        try:
            split = CoreSplit.of_this_machine()
        except CoreSplitError as exc:
            parser.error(str(exc))
        print(f"# --extender-core: {split.describe()}")
    pki_dir = tempfile.TemporaryDirectory(prefix="bench-tls-") if args.tls else None
    tls = ServingTls.make(Path(pki_dir.name)) if pki_dir is not None else None
    for nodes in args.nodes:
        results: dict[str, list[Result]] = {}
        for mode in args.modes:  # reported as each ends: a later failure keeps it
            result = run(mode, nodes, args.pods, args.timeout, args.profile,
                         base_tree=args.base_tree, apiserver_profile=args.apiserver_profile,
                         scheduler_profile=args.scheduler_profile,
                         owner=args.owner, event_qps=args.event_qps, tls=tls, split=split,
                         pace=args.pace)
            results.setdefault(mode, []).append(result)
            _report(result)
        lines = [] if args.pace else ratio_lines(nodes, results)
        # with --pace every mode keeps the pace: the runs compare by their latencies
        for line in lines + target_lines(nodes, results, paced=bool(args.pace)):
            print(line, flush=True)
    return 0


def ratio_lines(nodes: int, results: dict[str, list[Result]]) -> list[str]:
    """Each run of a mode that calls an extender against the mean pods/s of the
    invocation's ``plain`` and ``stock`` runs (a mode run twice is two runs, not its last)."""
    lines = []
    for mine in CALLED_MODES:
        for other in ("plain", "stock"):
            if mine not in results or other not in results:
                continue
            theirs = [r.pods_per_s for r in results[other]]
            mean = sum(theirs) / len(theirs)
            ours = ", ".join(f"{r.pods_per_s / mean if mean else float('nan'):.2f}"
                             for r in results[mine])
            against = f"the mean of {len(theirs)} runs" if len(theirs) > 1 else "its run"
            lines.append(f"nodes={nodes:5d} ratio {mine}/{other} = {ours} ({other}: {against}, "
                         f"{mean:.1f} pods/s)")
    return lines


def _report(result: Result) -> None:
    line = (f"nodes={result.nodes:5d} mode={result.mode:8s} bound={result.bound}/{result.pods} "
            f"burst={result.burst_s:7.2f}s to_last_bind={result.total_s:7.2f}s "
            f"pods/s={result.pods_per_s:7.1f} load={result.load[0]:.1f}->{result.load[1]:.1f}")
    if result.paced:
        paced = dict(result.paced)
        asked, created = paced.pop("asked"), paced.pop("created")
        line += (f"\n    paced: asked {asked:g} pods/s, created at {created:.1f}; "
                 f"created -> bound ms (the first {PACE_WARMUP:.0%} left out): "
                 + (", ".join(f"{label} {ms:.1f}" for label, ms in paced.items())
                    or "(no pod has both stamps)"))
    if result.cpu_ms_per_pod:
        line += "\n    cpu ms/pod: " + ", ".join(
            f"{name} {ms:.2f}" for name, ms in sorted(result.cpu_ms_per_pod.items()))
        background = result.background_ms_per_pod or {}
        processes = {name: ms for name, ms in result.cpu_ms_per_pod.items()
                     if name != SYSTEM_SHARE}  # the system share is inside "extender"
        total = sum(processes.values())
        line += f"; all processes {total:.2f}"
        if background:
            idle = sum(background.get(name, 0.0) for name in processes)
            line += ("\n    of it idle background: " + ", ".join(
                f"{name} {background.get(name, 0.0):.2f}" for name in sorted(processes))
                + f"; all processes net of it {total - idle:.2f}")
    if result.verb_ms:
        line += "\n    in-extender ms/call: " + ", ".join(
            f"{verb} {ms:.2f}" for verb, ms in result.verb_ms.items())
        if result.verb_cpu_ms:
            line += " (of it the answering thread's CPU: " + ", ".join(
                f"{verb} {ms:.2f}" for verb, ms in result.verb_cpu_ms.items()) + ")"
        if result.bind_p50_ms is not None:
            line += f"; bind p50 {result.bind_p50_ms:.2f}"
        counters = result.counters or {}
        if counters.get("binding_requests"):  # the extender's view of its Binding POST
            trip = 1000 * counters["binding_request_seconds"] / counters["binding_requests"]
            line += f"; Binding round trip mean {trip:.2f}"
    if result.thread_cpu_ms_per_pod:
        busy = sorted(result.thread_cpu_ms_per_pod.items(), key=lambda item: -item[1])
        line += "\n    extender threads, cpu ms/pod over the whole burst: " + ", ".join(
            f"{name} {ms:.2f}" for name, ms in busy if ms >= 0.005)
    if result.calls_per_pod:
        line += "\n    calls/pod: " + ", ".join(
            f"{verb} {n:.2f}" for verb, n in result.calls_per_pod.items())
    if result.counters:
        line += "\n    counters: " + ", ".join(
            f"{name} {value:g}" for name, value in sorted(result.counters.items()))
    print(line, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
