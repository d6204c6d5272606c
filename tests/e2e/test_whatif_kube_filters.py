"""The what-if against the real kube-scheduler + gpu-extender on a cluster where kube-scheduler's
own filters decide: a tainted pool, a selected pool, a cordoned node, a NotReady node and a
CPU-bound pool. The cluster is dumped as `kubectl get nodes,pods -A -o json` would dump it, the
same pods are submitted one at a time to the live cluster and replayed by `gpu-extender
what-if` on the dump: pod for pod, the same node and GPUs, or the same wait. `explain` then
reads the live cluster (kubeconfig) and the running extender (--url)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from localcluster.binaries import REPO_ROOT
from tests.e2e.gpu_helpers import NAMESPACE, gpu_cluster, gpu_pod, pending_message
from tests.e2e.gpu_helpers import assignment as assigned_gpus

pytestmark = pytest.mark.e2e

T4 = {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "4"}
L4 = {"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "4"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def pod(name: str, gpus: int, *, cpu: str | None = None, selector: dict[str, str] | None = None,
        tolerate_gpu_taint: bool = False) -> dict[str, Any]:
    limits: dict[str, int | str] = {"nvidia.com/gpu": gpus}
    if cpu is not None:
        limits["cpu"] = cpu
    out = gpu_pod(name, limits, node_selector=selector or {})
    out["metadata"]["namespace"] = NAMESPACE
    if tolerate_gpu_taint:
        out["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                       "effect": "NoSchedule"}]
    return out


PODS = [
    pod("selected", 1, selector={"pool": "batch"}),           # only the batch pool
    pod("tolerant", 2, tolerate_gpu_taint=True, selector={"nvidia.com/gpu.product": "NVIDIA-L4"}),
    pod("intolerant", 1, selector={"nvidia.com/gpu.product": "NVIDIA-L4"}),  # tainted: waits
    pod("pinned-cordoned", 1, selector={"kubernetes.io/hostname": "t4-cordoned"}),  # waits
    pod("pinned-notready", 1, selector={"kubernetes.io/hostname": "l4-notready"}),  # waits
    pod("small-cpu", 1, cpu="3", selector={"kubernetes.io/hostname": "t4-smallcpu"}),
    pod("small-cpu-2", 1, cpu="2", selector={"kubernetes.io/hostname": "t4-smallcpu"}),  # waits
    pod("big-cpu", 1, cpu="40"),                                # not on the 4-core node
    pod("huge-cpu", 1, cpu="500"),                              # waits everywhere
    pod("fill-1", 2),
    pod("fill-2", 3),
    pod("fill-3", 4),
    pod("fill-4", 4),                           # 4 GPUs free in all, on no one node: waits
]
WAITS = {  # pod: the what-if's reason for its own pinned or wanted nodes
    "intolerant": "taint nvidia.com/gpu=present:NoSchedule",
    "pinned-cordoned": "unschedulable (cordoned)",
    "pinned-notready": "not ready (taint node.kubernetes.io/not-ready:NoSchedule)",
    "small-cpu-2": "insufficient cpu",
    "huge-cpu": "insufficient cpu",
    "fill-4": "insufficient nvidia.com/gpu",  # kube-scheduler counts whole GPUs too
}
KUBE_REASON = re.compile(r"(\d+) (?:node\(s\) )?(.+?)(?=, \d+ |$)")


def kube_counts(message: str) -> Counter[str]:
    """Nodes per in-tree filter in kube-scheduler's FailedScheduling message ("0/7 nodes are
    available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint(s), 4 node(s)
    didn't match Pod's node affinity/selector, 3 Insufficient cpu. preemption: ...")."""
    summary = message.split("are available: ", 1)[1].split(". ", 1)[0]
    out: Counter[str] = Counter()
    for match in KUBE_REASON.finditer(summary):
        count, text = int(match[1]), match[2]
        if text.startswith("Insufficient "):
            out["insufficient " + text.removeprefix("Insufficient ")] += count
        elif "were unschedulable" in text:
            out["unschedulable"] += count
        elif "untolerated taint" in text:
            out["taint"] += count
        elif "node affinity/selector" in text:
            out["node affinity/selector"] += count
    return out


def our_counts(reasons: list[dict[str, Any]]) -> Counter[str]:
    """The what-if's reasons counted the same way (a not-ready node is a taint to
    kube-scheduler; each insufficient resource counts once per node, as kube lists them)."""
    out: Counter[str] = Counter()
    for reason in reasons:
        rule, n = reason["rule"], reason["nodes"]
        if rule == "resources":
            names = reason["message"].removeprefix("insufficient ").split(" (")[0]
            for name in names.split(", "):
                out[f"insufficient {name}"] += n
        elif rule in ("taint", "not ready"):
            out["taint"] += n
        elif rule in ("unschedulable", "node affinity/selector"):
            out[rule] += n
    return out


def make_cluster(cluster: Any) -> None:
    batch = {**T4, "pool": "batch"}
    cluster.create_node("t4-batch-0", {"nvidia.com/gpu": 4}, labels=batch)
    cluster.create_node("t4-batch-1", {"nvidia.com/gpu": 4}, labels=batch)
    cluster.create_node("t4-general", {"nvidia.com/gpu": 4}, labels=T4)
    cluster.create_node("l4-tainted", {"nvidia.com/gpu": 4}, labels=L4, taints=[GPU_TAINT])
    cluster.create_node("t4-cordoned", {"nvidia.com/gpu": 4}, labels=T4)
    cluster.create_node("t4-smallcpu", {"nvidia.com/gpu": 4}, labels=T4, cpu="4")
    # NotReady as the node lifecycle controller leaves it: the condition and its taint
    cluster.create_node("l4-notready", {"nvidia.com/gpu": 4}, labels=L4, taints=[NOT_READY])
    api = cluster.api()
    api.patch_node("t4-cordoned", {"spec": {"unschedulable": True}})
    api.patch_node_status("l4-notready", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
         "message": "fake", "lastHeartbeatTime": None}]}})


def test_what_if_predicts_the_live_scheduler_pod_for_pod(controlplane_binaries: object,
                                                         tmp_path: Path) -> None:
    live: dict[str, tuple[str, list[int]] | None] = {}
    messages: dict[str, str] = {}
    manifests = tmp_path / "pods.yaml"
    manifests.write_text(yaml.safe_dump_all(PODS))
    with gpu_cluster() as cluster:
        make_cluster(cluster)
        api = cluster.api()
        client = cluster.api_client()
        cluster.wait_for(lambda: len(api.list_node().items) >= 7, timeout_s=30,
                         description="the nodes")
        items = [{"kind": "Node", "apiVersion": "v1", **client.sanitize_for_serialization(n)}
                 for n in api.list_node().items]
        assert any(i["spec"].get("unschedulable") for i in items)
        dump = tmp_path / "cluster.json"
        dump.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        # the extender's watch has the nodes before the first pod
        cluster.wait_for(lambda: _extender_nodes(cluster.extender_url) >= 7, timeout_s=60,
                         description="the extender's inventory")
        for manifest in PODS:  # one at a time: the replay's order is the manifests'
            name = manifest["metadata"]["name"]
            api.create_namespaced_pod(NAMESPACE, manifest)
            cluster.wait_for(lambda n=name: api.read_namespaced_pod(n, NAMESPACE).spec.node_name
                             or pending_message(cluster, n), timeout_s=120,
                             description=f"{name} bound or rejected")
            node = api.read_namespaced_pod(name, NAMESPACE).spec.node_name
            live[name] = (node, list(assigned_gpus(api, name).gpu_indices)) if node else None
            if not node:
                messages[name] = pending_message(cluster, name)
        explained = _run("explain", f"{NAMESPACE}/huge-cpu", "--kubeconfig",
                         str(cluster.kubeconfig()))
        remote = _run("explain", f"{NAMESPACE}/fill-1", "--url", cluster.extender_url)
    out = tmp_path / "whatif.json"
    result = _run("what-if", "--cluster-file", str(dump), "--pods", str(manifests), "-o",
                  "json", "--output", str(out))
    print(result.stdout, result.stderr)
    pods = orjson.loads(out.read_bytes())["policies"][0]["pods"]
    replayed = {p["pod"].split("/")[1]: (p["node"], p["gpus"]) if p["node"] else None
                for p in pods}
    assert replayed == live
    waiting = {p["pod"].split("/")[1]: p for p in pods if not p["node"]}
    assert set(waiting) == set(WAITS)
    for name, reason in WAITS.items():
        assert reason in waiting[name]["waits"], (name, waiting[name]["waits"])
        # the same nodes left out by the same in-tree filters as kube-scheduler says
        assert our_counts(waiting[name]["reasons"]) == kube_counts(messages[name]), \
            (name, waiting[name]["waits"], messages[name])
    assert live["selected"] is not None and live["selected"][0].startswith("t4-batch-")
    assert live["tolerant"] is not None and live["tolerant"][0] == "l4-tainted"
    assert live["big-cpu"] is not None and live["big-cpu"][0] != "t4-smallcpu"
    # explain from the cluster: why huge-cpu waits; from the extender: where fill-1 is
    assert explained.returncode == 0, explained.stderr
    assert "insufficient cpu" in explained.stdout and "it waits" in explained.stdout
    assert remote.returncode == 0, remote.stderr
    fill = live["fill-1"]
    assert fill is not None
    assert "bound; asks" in remote.stdout and fill[0] in remote.stdout


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "extender", *args], check=False,
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


def _extender_nodes(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url + "/debug/inventory", timeout=10) as response:
        return len(orjson.loads(response.read())["nodes"])
