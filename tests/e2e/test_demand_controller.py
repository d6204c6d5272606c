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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import urllib3
import yaml
from kubernetes import client

from extender.demand.labels import ANNOTATION_PODS, LABEL_DEMAND, LABEL_TYPE, SELECTOR
from localcluster import ControlPlaneBinaries, LocalCluster
from localcluster.binaries import REPO_ROOT
from localcluster.network import free_port
from tests.e2e.gpu_helpers import GPU_SCHEDULER, NAMESPACE, create_pods, gpu_cluster, gpu_pod

pytestmark = pytest.mark.e2e

T4_LABELS = {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.memory": "15360",
             "nvidia.com/gpu.count": "1"}
TAINT = {"key": "demand-e2e", "value": "utility-only", "effect": "NoSchedule"}
IDLE_SCHEDULER = "gpu-scheduler-idle"
"""A scheduler name no scheduler runs: its pod keeps the condition the test writes."""
SHARES = [f"share-{i}" for i in range(4)]
LATE = "share-late"


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

        # a fifth, 1 GiB share packs onto the same GPU (12288 + 1024 = 13312 <= 15360): the
        # utility pod now serves it too, and it is told so
        create_pods(cluster, [gpu_pod(LATE, {"gpu-extender.io/gpu-memory": "1Gi"})])
        cluster.wait_for(lambda: unschedulable(cluster, LATE), timeout_s=90,
                         description=f"{LATE} to be Unschedulable")
        report = demand_once(cluster, demand_config)
        assert actions(report) == [("refresh", "Pod")]
        served = api.read_namespaced_pod(utility.metadata.name, NAMESPACE).metadata.annotations[
            ANNOTATION_PODS].split(",")
        assert sorted(served) == [f"{NAMESPACE}/{n}" for n in sorted([*SHARES, LATE])]
        cluster.wait_for(lambda: any(e.reason == "GpuDemandRequested"
                                     for e in cluster.events_for_pod(NAMESPACE, LATE)),
                         description="the demand event on the late pod")

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
        for name in [*SHARES, LATE]:
            cluster.wait_for(lambda n=name: api.read_namespaced_pod(n, NAMESPACE).spec.node_name,
                             timeout_s=90, description=f"{name} to bind on t4-1")
        report = demand_once(cluster, demand_config)
        assert report["plan"] == [] and report["actions"] == []
        assert utility_pods(cluster) == []

        # a pod that fits now (15360 - 13312 = 2048 MiB are free on t4-1) gets no demand
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


PR_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "provisioningrequests.autoscaling.x-k8s.io"},
    "spec": {"group": "autoscaling.x-k8s.io", "scope": "Namespaced",
             "names": {"kind": "ProvisioningRequest", "plural": "provisioningrequests",
                       "singular": "provisioningrequest", "listKind": "ProvisioningRequestList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}
"""A structural stand-in for Cluster Autoscaler's CRD (24b's e2e applies the upstream file):
enough for the API to store what the controller writes."""


def test_demand_provisioning_request(controlplane_binaries: ControlPlaneBinaries,
                                     demand_config: Path) -> None:
    """Two typed whole-GPU L4 pods: one PodTemplate and one ProvisioningRequest for two
    one-GPU L4 nodes; both go once the pods bound on the nodes an autoscaler brought."""
    with gpu_cluster() as cluster:
        api = cluster.api()
        extensions = client.ApiextensionsV1Api(cluster.api_client())
        extensions.create_custom_resource_definition(PR_CRD)
        crd = PR_CRD["metadata"]["name"]
        cluster.wait_for(lambda: any(
            c.type == "Established" and c.status == "True"
            for c in extensions.read_custom_resource_definition(crd).status.conditions or ()),
            description="the ProvisioningRequest CRD established")
        typed = {"gpu-extender.io/accelerator": "l4"}
        create_pods(cluster, [gpu_pod(n, {"nvidia.com/gpu": 1}, labels=typed)
                              for n in ("l4-a", "l4-b")])
        for name in ("l4-a", "l4-b"):
            cluster.wait_for(lambda n=name: unschedulable(cluster, n), timeout_s=90,
                             description=f"{name} to be Unschedulable")
        report = demand_once(cluster, demand_config, "--mode", "provisioning-request")
        assert sorted(actions(report)) == [("create", "PodTemplate"),
                                           ("create", "ProvisioningRequest")]
        custom = client.CustomObjectsApi(cluster.api_client())
        [request] = custom.list_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", NAMESPACE, "provisioningrequests",
            label_selector=SELECTOR)["items"]
        name = request["metadata"]["name"]
        assert request["spec"] == {
            "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": name}, "count": 2}]}
        template = api.read_namespaced_pod_template(name, NAMESPACE)
        assert template.template.spec.containers[0].resources.limits == {"nvidia.com/gpu": "1"}
        assert template.metadata.labels[LABEL_TYPE] == "l4"
        message = cluster.wait_for(lambda: next(
            (e.message for e in cluster.events_for_pod(NAMESPACE, "l4-a")
             if e.reason == "GpuDemandRequested"), None), description="the demand event")
        assert message == f"waiting for 2 x l4 nodes requested via ProvisioningRequest " \
                          f"{NAMESPACE}/{name}"
        # the "autoscaler" provisions: the pods bind, and the next pass deletes both objects
        for node in ("l4-0", "l4-1"):
            cluster.create_node(node, {"nvidia.com/gpu": 1}, labels={
                "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "1"})
        for pod in ("l4-a", "l4-b"):
            cluster.wait_for(lambda p=pod: api.read_namespaced_pod(p, NAMESPACE).spec.node_name,
                             timeout_s=90, description=f"{pod} to bind")
        report = demand_once(cluster, demand_config, "--mode", "provisioning-request")
        assert sorted(actions(report)) == [("served", "PodTemplate"),
                                           ("served", "ProvisioningRequest")]
        assert custom.list_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", NAMESPACE, "provisioningrequests")["items"] == []
        assert api.list_namespaced_pod_template(NAMESPACE, label_selector=SELECTOR).items == []


@contextmanager
def running_demand(cluster: LocalCluster, config: Path, log: Path) -> Iterator[str]:
    """``gpu-extender demand`` as a process (the loop, leader-elected); its monitoring URL
    once ``/readyz`` answers 200."""
    url = f"http://127.0.0.1:{free_port()}"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "extender", "demand", "--kubeconfig",
             str(cluster.kubeconfig("admin")), "--config", str(config), "--namespace",
             NAMESPACE, "--leader-namespace", "kube-system", "--debounce-seconds", "0",
             "--cooldown-seconds", "600", "--interval", "1",
             "--monitoring-address", url.removeprefix("http://")],
            cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)
        http = urllib3.PoolManager()
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    if http.request("GET", url + "/readyz", timeout=1.0).status == 200:
                        break
                except urllib3.exceptions.HTTPError:
                    pass
                assert time.monotonic() < deadline, "demand never became ready"
                time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=20)


def test_demand_loop(controlplane_binaries: ControlPlaneBinaries, demand_config: Path,
                     tmp_path: Path) -> None:
    """The running controller: the utility pod appears by itself; bound on the new node (which
    only it tolerates), it is deleted at once and not asked for again (held for the
    cooldown); once the node is open to all, the shares bind there and nothing is left."""
    with gpu_cluster() as cluster:
        api = cluster.api()
        create_priority_class(cluster)
        cluster.create_node("t4-0", {"nvidia.com/gpu": 1}, labels=T4_LABELS)
        create_pods(cluster, [gpu_pod("full", {"nvidia.com/gpu": 1})])
        cluster.wait_for(lambda: api.read_namespaced_pod("full", NAMESPACE).spec.node_name,
                         timeout_s=60, description="the whole-GPU pod to bind")
        http = urllib3.PoolManager()
        with running_demand(cluster, demand_config, tmp_path / "demand.log") as url:
            def metrics() -> str:
                return str(http.request("GET", url + "/metrics").data.decode())

            create_pods(cluster, [gpu_pod(n, {"gpu-extender.io/gpu-memory": "3Gi"})
                                  for n in SHARES])
            [utility] = cluster.wait_for(lambda: utility_pods(cluster), timeout_s=120,
                                         description="a utility pod")
            assert utility.metadata.labels[LABEL_TYPE] == "t4"
            cluster.create_node("t4-1", {"nvidia.com/gpu": 1}, labels=T4_LABELS,
                                taints=[TAINT])
            cluster.wait_for(lambda: 'gpu_extender_demand_deleted_total{reason="bound"} 1.0'
                             in metrics(), timeout_s=120,
                             description="the bound utility pod deleted")
            api.patch_node("t4-1", {"spec": {"taints": []}})
            for name in SHARES:
                cluster.wait_for(lambda n=name: api.read_namespaced_pod(
                    n, NAMESPACE).spec.node_name, timeout_s=120,
                    description=f"{name} to bind on t4-1")
            cluster.wait_for(lambda: not utility_pods(cluster), timeout_s=60,
                             description="no demand left")
            text = metrics()
            assert 'gpu_extender_demand_created_total{kind="Pod"} 1.0' in text
            assert "gpu_extender_demand_reconcile_errors_total 0.0" in text
