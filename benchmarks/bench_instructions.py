"""Instructions per pod of a burst's decisions, counted by callgrind: a figure this VM's noise
cannot move (issue 22).

    .venv/bin/python benchmarks/bench_instructions.py                         # this checkout
    .venv/bin/python benchmarks/bench_instructions.py --tree /work/wt-base --tree .   # A/B

Why: on the shared 2-vCPU VMs the same code measured 1,120 and 2,059 us of CPU per filter
minutes apart (twenty-fifth session), so a change worth 5 % could not be told from noise by
timing it. ``valgrind --tool=callgrind`` counts the instructions the process executes, which
is the same for the same code, inputs and environment whatever else the machine does (the
host has no hardware counters for ``perf stat``).

What is counted: ``bench_verbs.py --in-process --burst``'s pod cycle, in process, on
``--nodes`` empty nodes x 8 T4: the pod watch's ADDED of the pending pod (a copy, as the watch
parses its own), the wire decode of each body, ``filter`` with the exact cut
(its facts known), the work once the answer is out (the deferred hold, the warm, the scoring
ahead), ``prioritize`` when more than one node is kept, and ``bind`` (offline: the Binding is
applied to the inventory as the watch applies its echo, and the explanation composed).
Each pod is a new replica of one Deployment as the API server sends it (``api_pod``: with the
controller's ``managedFields``, its owner, its token volume; ~2.6 KB of JSON, where
``bench_verbs``'s pod has only what the decode reads), listed the nodes with a GPU left in a
new order (kube-scheduler lists them in the order its parallel filters finish), or with
``--repeat N`` in the same order for N pods in a row (at 1,000 nodes kube-scheduler sent the
same list as the pod before for 74-83 % of filters: ``--repeat 5``). Filter's bodies are
decoded as the worker decodes them (``SchedulingVerbs.filter_args``, where the tree has it).

How: for each tree, two runs under callgrind with the same setup and ``--warmup`` pods, one
with ``--pods`` more: their difference over ``--pods`` is the instructions per pod of a burst
already under way (startup, the platform, the first list and the warmup cancel out). The
driver's own work per pod (the node list, its order, the JSON bodies, reading the answers) is
counted in both and is the same for every tree; ``--driver-only`` counts it alone (the same
bodies, no verb called), to subtract. The runs go two at a time (one per core). The chosen
nodes' digest shows that the trees decided the same.

Instructions are not seconds (a cache miss costs more than an add, and callgrind runs the
process ~50 x slower): use it to compare trees, and time them to report milliseconds.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import platform as host
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ORDERS = 64
"""Distinct node orders, drawn once and cycled (drawing one per pod would count ~0.5 ms of
``random.shuffle`` per pod into every figure)."""
OWNER_UID = "0c1e9b7a-5d3f-4e2a-9b8c-7d6e5f4a3b2c"
"""The burst's ReplicaSet."""
_COLLECTED = re.compile(r"Collected\s*:\s*([0-9]+)")


# -- the child: one burst in process ------------------------------------------------------

def api_pod(serial: int) -> dict[str, Any]:
    """One replica of the burst's Deployment as the API server sends it to kube-scheduler and
    kube-scheduler to the extender: one whole GPU, and the fields every such pod carries (the
    controller's ``managedFields``, the owner, the service-account token volume with its
    random name, the default tolerations), which the shape check and the decode walk."""
    name, token = f"burst-7d9c6b5f4-{serial:05d}", f"kube-api-access-{serial:05x}"
    gpu = {"nvidia.com/gpu": "1"}
    leaf: dict[str, Any] = {}
    return {
        "metadata": {
            "name": name, "generateName": "burst-7d9c6b5f4-", "namespace": "bench",
            "uid": f"5f0c{serial:08x}-0000-4000-8000-000000000000",
            "resourceVersion": str(100000 + serial),
            "creationTimestamp": "2026-12-07T05:00:00Z",
            "labels": {"app": "burst", "pod-template-hash": "7d9c6b5f4"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "burst-7d9c6b5f4", "uid": OWNER_UID,
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{
                "manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "v1", "time": "2026-12-07T05:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {
                        "f:generateName": leaf,
                        "f:labels": {".": leaf, "f:app": leaf, "f:pod-template-hash": leaf},
                        "f:ownerReferences": {".": leaf, f'k:{{"uid":"{OWNER_UID}"}}': leaf}},
                    "f:spec": {
                        "f:containers": {'k:{"name":"main"}': {
                            ".": leaf, "f:image": leaf, "f:imagePullPolicy": leaf,
                            "f:name": leaf, "f:terminationMessagePath": leaf,
                            "f:terminationMessagePolicy": leaf,
                            "f:resources": {
                                ".": leaf, "f:limits": {".": leaf, "f:nvidia.com/gpu": leaf},
                                "f:requests": {".": leaf, "f:cpu": leaf, "f:memory": leaf,
                                               "f:nvidia.com/gpu": leaf}}}},
                        "f:dnsPolicy": leaf, "f:enableServiceLinks": leaf,
                        "f:restartPolicy": leaf, "f:schedulerName": leaf,
                        "f:securityContext": leaf, "f:terminationGracePeriodSeconds": leaf}},
            }]},
        "spec": {
            "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "containers": [{
                "name": "main", "image": "registry.example/app:1",
                "resources": {"limits": gpu, "requests": {"cpu": "100m", "memory": "128Mi",
                                                          **gpu}},
                "volumeMounts": [{"name": token, "readOnly": True, "mountPath":
                                  "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "serviceAccount": "default", "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": f"node.kubernetes.io/{taint}", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}
                            for taint in ("not-ready", "unreachable")],
            "priority": 0, "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority"},
        "status": {"phase": "Pending", "qosClass": "Burstable"}}


@dataclass
class BurstDriver:
    """The offline extender of a burst on N empty nodes x 8 T4 (``bench_verbs``), and what
    kube-scheduler would send it."""

    service: Any
    decode_filter_args: Callable[[bytes], Any]
    """Filter's bodies as the worker decodes them (a tree from before ``FilterArgsDecoder``:
    the plain decode)."""
    orders: list[list[str]]
    free: dict[str, int]
    """GPUs left per node, as the driver's stand-in for NodeResourcesFit counts them."""

    def listed(self, serial: int, repeat: int) -> list[str]:
        """Pod ``serial``'s node list: its order (each listed for ``repeat`` pods in a row)
        less the nodes filled meanwhile (NodeResourcesFit)."""
        return [name for name in self.orders[serial // repeat % len(self.orders)]
                if self.free[name]]


def start_burst(n_nodes: int) -> BurstDriver:
    """A started offline extender on ``n_nodes`` empty nodes, and the burst's node orders."""
    import random

    from extender.server.wire import decode_extender_args

    # after the extender's import: bench_verbs puts this checkout first on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_verbs import burst_cluster, burst_service

    cluster = burst_cluster(n_nodes)
    service = burst_service(cluster)
    names = [item["metadata"]["name"] for item in cluster["items"]]
    draw = random.Random(7)
    orders = [draw.sample(names, len(names)) for _ in range(ORDERS)]
    return BurstDriver(service, getattr(service.verbs, "filter_args", decode_extender_args),
                       orders, dict.fromkeys(names, 8))


def run_burst(n_nodes: int, warmup: int, pods: int, *, driver_only: bool,
              repeat: int = 1) -> str:
    """The burst's pod cycles; the digest of the chosen nodes (``driver_only``: the driver's own
    stand-in choices, no verb called). Each order lists ``repeat`` pods in a row (less the
    nodes filled meanwhile)."""
    import orjson

    from extender.server.wire import decode_binding_args, decode_extender_args

    driver = start_burst(n_nodes)
    service, verbs, free = driver.service, driver.service.verbs, driver.free
    digest = hashlib.sha256()
    for i in range(warmup + pods):
        pod = api_pod(i)
        listed = driver.listed(i, repeat)
        body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": listed})
        if driver_only:  # the same bodies and answers' parsing, no verb
            best = listed[i % len(listed)]
            orjson.loads(orjson.dumps({"NodeNames": [best], "FailedNodes": {}, "Error": ""}))
        else:
            # the pod watch's ADDED of the pending pod (its own parse), before the filter
            service.applier.pod_event("ADDED", orjson.loads(orjson.dumps(pod)))
            feasible = orjson.loads(verbs.filter(driver.decode_filter_args(body)).body)["NodeNames"]
            verbs.warm_next()  # what the worker runs once the answer is sent
            if len(feasible) == 1:  # kube-scheduler takes it: no prioritize
                best = feasible[0]
            else:
                body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": feasible})
                answer = verbs.prioritize(decode_extender_args(body))
                best = max(orjson.loads(answer.body), key=lambda host: host["Score"])["Host"]
        body = orjson.dumps({"PodName": pod["metadata"]["name"], "PodNamespace": "bench",
                             "PodUID": pod["metadata"]["uid"], "Node": best})
        if not driver_only:
            bound = verbs.bind(decode_binding_args(body))
            if orjson.loads(bound.body)["Error"]:
                raise SystemExit(f"bind failed: {bound.body!r}")
        free[best] -= 1
        digest.update(best.encode())
    service.stop()
    return digest.hexdigest()[:12]


# -- the parent: callgrind runs -----------------------------------------------------------

@dataclass(frozen=True)
class Count:
    tree: Path
    driver_only: bool
    pods: int
    instructions: int
    digest: str


def count(tree: Path, n_nodes: int, warmup: int, pods: int, driver_only: bool, *,
          repeat: int = 1) -> Count:
    """One burst under callgrind; its instructions and the chosen nodes' digest."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "callgrind.log"
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                   f"--log-file={log}", sys.executable, str(Path(__file__).resolve()),
                   "--child", "--nodes", str(n_nodes), "--warmup", str(warmup),
                   "--pods", str(pods), "--repeat", str(repeat)] + (
                       ["--driver-only"] if driver_only else [])
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(tree),
                                   "PYTHONHASHSEED": "0"})
        text = log.read_text() if log.exists() else ""
        instructions = collected(text)
        if done.returncode != 0 or instructions is None:
            raise SystemExit(f"callgrind run failed in {tree} (exit {done.returncode}):\n"
                             f"{done.stderr[-2000:]}{text[-2000:]}")
    return Count(tree, driver_only, pods, instructions, done.stdout.strip())


def collected(log: str) -> int | None:
    """The instructions a callgrind log reports (``Collected : N``), ``None`` if none."""
    found = _COLLECTED.search(log)
    return int(found.group(1)) if found is not None else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=200, help="pods counted (default 200)")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--tree", action="append", type=Path,
                        help="a checkout to count (repeat to compare; default: this one)")
    parser.add_argument("--driver-only", action="store_true",
                        help="also count the driver alone (no verb called)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="pods in a row listed in the same order (default 1: a new order "
                             "for every pod; kube-scheduler repeated its list for 74-83 %% "
                             "of filters at 1,000 nodes: --repeat 5)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.pods < 0 or args.warmup < 0 or args.nodes < 1 or args.repeat < 1:
            raise SystemExit("--nodes and --repeat must be >= 1, --pods and --warmup >= 0")
        print(run_burst(args.nodes, args.warmup, args.pods, driver_only=args.driver_only,
                        repeat=args.repeat))
        return 0
    if args.pods < 1 or args.warmup < 0 or args.nodes < 1 or args.repeat < 1:
        parser.error("--nodes, --pods and --repeat must be >= 1, --warmup >= 0")
    trees = [tree.resolve() for tree in (args.tree or [REPO])]
    for tree in trees:
        if not (tree / "extender").is_dir():
            parser.error(f"--tree {tree}: no extender/ package there")
    jobs = [(tree, False) for tree in trees] + ([(trees[0], True)] if args.driver_only else [])
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {host.node()}, "
          f"{host.machine()}, Python {host.python_version()}; callgrind instructions per pod, "
          f"{args.nodes} nodes x 8 T4, {args.warmup} warmup + {args.pods} counted pods, "
          f"each order listed for {args.repeat} pod(s) in a row")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [(tree, driver, pool.submit(count, tree, args.nodes, args.warmup, pods,
                                              driver, repeat=args.repeat))
                   for tree, driver in jobs for pods in (0, args.pods)]
        counts = [(tree, driver, future.result()) for tree, driver, future in futures]
    per_pod: dict[tuple[Path, bool], float] = {}
    digests: dict[tuple[Path, bool], str] = {}
    for tree, driver, result in counts:
        key = (tree, driver)
        sign = 1 if result.pods else -1
        per_pod[key] = per_pod.get(key, 0.0) + sign * result.instructions / args.pods
        if result.pods:
            digests[key] = result.digest
    driver_cost = per_pod.get((trees[0], True))
    first = per_pod[(trees[0], False)]
    for tree in trees:
        value = per_pod[(tree, False)]
        line = (f"{tree}: {value / 1e6:.2f} M instructions per pod "
                f"(x{value / first:.3f} of the first)")
        if driver_cost is not None:
            line += f"; {(value - driver_cost) / 1e6:.2f} M net of the driver"
        print(line + f"; chosen nodes {digests[(tree, False)]}")
    if driver_cost is not None:
        print(f"the driver alone: {driver_cost / 1e6:.2f} M instructions per pod")
    if len({digests[(tree, False)] for tree in trees}) > 1:
        print("the trees chose different nodes: the figures compare different bursts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
