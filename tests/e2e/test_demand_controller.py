"""``gpu-extender demand --once`` against the real kube-apiserver, kube-scheduler and extender:
the reconcile rules, one pass at a time (24b's e2e runs the whole loop with a fake autoscaler).

On a full cluster (one T4, held whole), four 3 GiB share pods wait: one pass asks for exactly
one one-GPU T4 (4 x 3072 = 12288 <= 15360 MiB) with one utility pod, and tells each pod so; a
second pass changes nothing; the utility pod is deleted as soon as it is bound; once the real
pods bound nothing is asked for; a pod that fits now gets no demand.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kubernetes import client

from extender.demand.labels import ANNOTATION_PODS, LABEL_DEMAND, LABEL_TYPE, SELECTOR
from localcluster import ControlPlaneBinaries, LocalCluster
from localcluster.binaries import REPO_ROOT
from tests.e2e.gpu_helpers import GPU_SCHEDULER, NAMESPACE, create_pods, gpu_cluster, gpu_pod

pytestmark = pytest.mark.e2e

T4_LABELS = {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.memory": "15360",
             "nvidia.com/gpu.count": "1"}
TAINT = {"key": "demand-e2e", "value": "utility-only", "effect": "NoSchedule"}
IDLE_SCHEDULER = "gpu-scheduler-idle"
"""A scheduler name no scheduler runs: its pod keeps the condition the test writes."""
SHARES = [f"share-{i}" for i in range(4)]


def demand_once(cluster: LocalCluster, config: Path, *extra: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "extender", "demand", "--once", "-o", "json",
         "--kubeconfig", str(cluster.kubeconfig("admin")), "--config", str(config),
         "--namespace", NAMESPACE, "--debounce-seconds", "0", "--cooldown-seconds", "600",
         "--scheduler-name", GPU_SCHEDULER, "--scheduler-name", IDLE_SCHEDULER,
         "--log-level", "warning", *extra],
        cwd=REPO_ROOT, capture_output=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr.decode() + result.stdout.decode()
    report: dict[str, Any] = orjson.loads(result.stdout)
    return report


def create_priority_class(cluster: LocalCluster) -> None:
    """The chart's PriorityClass (24b ships it): below zero, never preempting."""
    client.SchedulingV1Api(cluster.api_client()).create_priority_class(client.V1PriorityClass(
        metadata=client.V1ObjectMeta(name="gpu-extender-demand"), value=-100,
        preemption_policy="Never"))


def utility_pods(cluster: LocalCluster) -> list[client.V1Pod]:
    return list(cluster.api().list_namespaced_pod(NAMESPACE, label_selector=SELECTOR).items)


def unschedulable(cluster: LocalCluster, name: str) -> bool:
    pod = cluster.api().read_namespaced_pod(name, NAMESPACE)
    return any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
               for c in pod.status.conditions or ())


def actions(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["action"], a["kind"]) for a in report["actions"]]


@pytest.fixture
def demand_config(tmp_path: Path) -> Path:
    """The demand side tolerates the test taint on T4 nodes (the platform mapping's
    tolerations), so a tainted new node takes the utility pod and none of the shares."""
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump({"admission": {"platformMapping": {"gpuTypes": [
        {"name": "t4", "tolerations": [{"key": TAINT["key"], "operator": "Exists"}]}]}}}))
    return path


def test_demand_once_reconcile_rules(controlplane_binaries: ControlPlaneBinaries,
                                     demand_config: Path) -> None:
    with gpu_cluster() as cluster:
        api = cluster.api()
        create_priority_class(cluster)
        cluster.create_node("t4-0", {"nvidia.com/gpu": 1}, labels=T4_LABELS)
        create_pods(cluster, [gpu_pod("full", {"nvidia.com/gpu": 1})])
        cluster.wait_for(lambda: api.read_namespaced_pod("full", NAMESPACE).spec.node_name,
                         timeout_s=60, description="the whole-GPU pod to bind")
        create_pods(cluster, [gpu_pod(n, {"gpu-extender.io/gpu-memory": "3Gi"})
                              for n in SHARES])
        for name in SHARES:
            cluster.wait_for(lambda n=name: unschedulable(cluster, n), timeout_s=90,
                             description=f"{name} to be Unschedulable")

        # debouncing: nothing planned yet, nothing written
        report = demand_once(cluster, demand_config, "--debounce-seconds", "3600", "--dry-run")
        assert {p["waiting"] for p in report["pods"]} == {"debouncing"}
        assert report["actions"] == [] and utility_pods(cluster) == []

        # one pass: one one-GPU T4 node for the four shares, one utility pod
        report = demand_once(cluster, demand_config)
        assert [(n["type"], n["gpusPerNode"], sorted(n["pods"])) for n in report["plan"]] == \
            [("t4", 1, [f"{NAMESPACE}/{n}" for n in SHARES])]
        assert actions(report) == [("create", "Pod")]
        [utility] = utility_pods(cluster)
        assert utility.metadata.labels[LABEL_DEMAND] == "true"
        assert utility.metadata.labels[LABEL_TYPE] == "t4"
        assert sorted(utility.metadata.annotations[ANNOTATION_PODS].split(",")) == \
            [f"{NAMESPACE}/{n}" for n in SHARES]
        assert utility.spec.scheduler_name == GPU_SCHEDULER
        assert utility.spec.priority < 0 and utility.spec.preemption_policy == "Never"
        assert utility.spec.containers[0].resources.requests == {"nvidia.com/gpu": "1"}
        terms = utility.spec.affinity.node_affinity. \
            required_during_scheduling_ignored_during_execution.node_selector_terms
        assert "Tesla-T4" in terms[0].match_expressions[0].values
        message = cluster.wait_for(lambda: next(
            (e.message for e in cluster.events_for_pod(NAMESPACE, SHARES[0])
             if e.reason == "GpuDemandRequested"), None), description="the demand event")
        assert message == f"waiting for 1 x t4 node requested via utility pod " \
                          f"{utility.metadata.name}"

        # a second pass is idempotent
        report = demand_once(cluster, demand_config)
        assert actions(report) == [("wanted", "Pod")]
        assert [p.metadata.name for p in utility_pods(cluster)] == [utility.metadata.name]

        # the "autoscaler" brings a node only the utility pod tolerates: it binds there, and
        # the next pass deletes it at once (it would hold the GPU the shares need)
        cluster.create_node("t4-1", {"nvidia.com/gpu": 1}, labels=T4_LABELS, taints=[TAINT])
        cluster.wait_for(lambda: api.read_namespaced_pod(
            utility.metadata.name, NAMESPACE).spec.node_name, timeout_s=90,
            description="the utility pod to bind on the new node")
        report = demand_once(cluster, demand_config)
        assert ("bound", "Pod") in actions(report)
        assert ("create", "Pod") not in actions(report)  # decided again on the next pass
        cluster.wait_for(lambda: not utility_pods(cluster), description="the utility pod gone")

        # the node is opened to everyone: the shares bind, and nothing is asked any more
        api.patch_node("t4-1", {"spec": {"taints": []}})
        for name in SHARES:
            cluster.wait_for(lambda n=name: api.read_namespaced_pod(n, NAMESPACE).spec.node_name,
                             timeout_s=90, description=f"{name} to bind on t4-1")
        report = demand_once(cluster, demand_config)
        assert report["plan"] == [] and report["actions"] == []
        assert utility_pods(cluster) == []

        # a pod that fits now (3072 MiB are free on t4-1) gets no demand
        create_pods(cluster, [gpu_pod("fits-now", {"gpu-extender.io/gpu-memory": "2Gi"},
                                      scheduler=IDLE_SCHEDULER)])
        api.patch_namespaced_pod_status("fits-now", NAMESPACE, {"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
        report = demand_once(cluster, demand_config)
        assert [(p["pod"], p["waiting"]) for p in report["pods"]] == \
            [(f"{NAMESPACE}/fits-now", "fits-now")]
        assert report["actions"] == [] and utility_pods(cluster) == []


def test_demand_served_pods_delete_it(controlplane_binaries: ControlPlaneBinaries,
                                      demand_config: Path) -> None:
    """A utility pod whose real pod bound (elsewhere) goes at once, cooldown or not."""
    with gpu_cluster() as cluster:
        api = cluster.api()
        create_priority_class(cluster)
        create_pods(cluster, [gpu_pod("typed", {"nvidia.com/gpu": 1},
                                      labels={"gpu-extender.io/accelerator": "l4"})])
        cluster.wait_for(lambda: unschedulable(cluster, "typed"), timeout_s=90,
                         description="the typed pod to be Unschedulable")
        report = demand_once(cluster, demand_config)
        assert [(n["type"], n["pods"]) for n in report["plan"]] == [("l4", [f"{NAMESPACE}/typed"])]
        [utility] = utility_pods(cluster)
        assert utility.metadata.labels[LABEL_TYPE] == "l4"
        # an L4 node that the utility pod cannot use (its affinity wants the GFD product
        # label) but the typed pod can (typed by the extender's own label reading)
        cluster.create_node("l4-0", {"nvidia.com/gpu": 1},
                            labels={"cloud.google.com/gke-accelerator": "nvidia-l4"})
        cluster.wait_for(lambda: api.read_namespaced_pod("typed", NAMESPACE).spec.node_name,
                         timeout_s=90, description="the typed pod to bind")
        report = demand_once(cluster, demand_config)
        assert actions(report) == [("served", "Pod")]
        assert utility_pods(cluster) == []
