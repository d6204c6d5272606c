"""The demand bridge end to end, without a cloud: the real kube-scheduler and extender, the real
``gpu-extender demand`` (running with a token of its own ServiceAccount, rights exactly as the
chart renders them per mode), kwok nodes, and a test-side autoscaler
(``tests/e2e/fake_autoscaler.py``) that answers ProvisioningRequests or pending utility pods with
kwok nodes of the requested type, labelled as GFD would.

The fleet: ``t4-0`` (one T4, held by an untyped whole-GPU pod) and ``a100-0`` (one A100,
protected: untyped pods never land there). Then, in order:

1. a typed A100 share fits now (on ``a100-0``): it binds, and never becomes demand;
2. four untyped 3 GiB shares fit nowhere (the T4 is full, the A100 protected): together
   4 x 3 = 12 GiB <= 15 GiB, what one T4 reports (15360 MiB), and the T4 is the cheapest
   unprotected type, so the demand is exactly **one one-GPU T4 node** (not four, not an A100);
   all four bind on it, and the demand objects go;
3. a typed L4 share (4 GiB) fits nowhere: one one-GPU L4 node, it binds there, demand gone.

Every wait is for a condition, with deadlines generous for a loaded machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.helm import DEMAND_MODES
from localcluster.kwok import Kwok
from tests.e2e.demand_harness import (
    DEMAND_ACCOUNT,
    DEMAND_SELECTOR,
    RunningDemand,
    account_kubeconfig,
    apply_provisioning_request_crd,
    demand_events,
    demand_objects,
    install_demand_rbac,
    start_demand,
)
from tests.e2e.fake_autoscaler import PRODUCT_LABEL, FakeAutoscaler
from tests.e2e.gpu_helpers import NAMESPACE, create_pods, gpu_cluster, gpu_pod, wait_bound

pytestmark = pytest.mark.e2e

TIMEOUT_S = 240.0
ACCELERATOR = "gpu-extender.io/accelerator"


@dataclass
class Bridge:
    cluster: LocalCluster
    kwok: Kwok
    scaler: FakeAutoscaler
    mode: str
    demand: RunningDemand


@pytest.fixture(params=DEMAND_MODES)
def bridge(request: pytest.FixtureRequest, controlplane_binaries: object, kwok_binary: Path,
           tmp_path: Path) -> Iterator[Bridge]:
    mode = str(request.param)
    with gpu_cluster() as cluster:
        kwok = Kwok.start(cluster, kwok_binary)
        apply_provisioning_request_crd(cluster)
        install_demand_rbac(cluster, mode)
        kubeconfig = account_kubeconfig(cluster, DEMAND_ACCOUNT, tmp_path / "demand.kubeconfig")
        demand = start_demand(cluster, mode, kubeconfig)
        selector = DEMAND_SELECTOR if mode == "utility-pods" else None
        with FakeAutoscaler(cluster, kwok, utility_selector=selector).running() as scaler:
            yield Bridge(cluster, kwok, scaler, mode, demand)


def share(name: str, gib: int, accelerator: str = "") -> dict[str, Any]:
    labels = {ACCELERATOR: accelerator} if accelerator else {}
    manifest = gpu_pod(name, {"gpu-extender.io/gpu-memory": f"{gib}Gi"}, labels=labels)
    manifest["spec"]["terminationGracePeriodSeconds"] = 1
    return manifest


def wait_no_demand(bridge: Bridge) -> None:
    bridge.cluster.wait_for(lambda: not demand_objects(bridge.cluster), timeout_s=TIMEOUT_S,
                            description="the demand objects to be deleted")


def scaled(bridge: Bridge) -> list[tuple[str, int]]:
    return scaled_of(bridge.scaler)


def test_pending_gpu_pods_bring_exactly_the_nodes_they_need(bridge: Bridge) -> None:
    cluster, kwok = bridge.cluster, bridge.kwok
    kwok.create_node(cluster, "t4-0", {"nvidia.com/gpu": 1},
                     labels={PRODUCT_LABEL: "Tesla-T4", "nvidia.com/gpu.memory": "15360"})
    kwok.create_node(cluster, "a100-0", {"nvidia.com/gpu": 1},
                     labels={PRODUCT_LABEL: "NVIDIA-A100-SXM4-80GB"})
    create_pods(cluster, [gpu_pod("whole-0", {"nvidia.com/gpu": 1})])
    assert wait_bound(cluster, "whole-0", TIMEOUT_S) == "t4-0"

    # 1. fits now: no demand
    create_pods(cluster, [share("fits-now", 3, accelerator="a100-80gb")])
    assert wait_bound(cluster, "fits-now", TIMEOUT_S) == "a100-0"

    # 2. four 3 GiB shares on a full cluster: one one-GPU T4 node
    create_pods(cluster, [share(f"share-{i}", 3) for i in range(4)])
    nodes = {wait_bound(cluster, f"share-{i}", TIMEOUT_S) for i in range(4)}
    assert scaled(bridge) == [("t4", 1)], bridge.scaler.created()
    assert nodes == {bridge.scaler.created()[0].node}
    assert demand_events(cluster, NAMESPACE, "share-0"), "the waiting pods were told"
    wait_no_demand(bridge)
    assert demand_events(cluster, NAMESPACE, "fits-now") == []

    # 3. a typed L4 share: one L4 node
    create_pods(cluster, [share("typed-l4", 4, accelerator="l4")])
    node = wait_bound(cluster, "typed-l4", TIMEOUT_S)
    assert scaled(bridge) == [("t4", 1), ("l4", 1)], bridge.scaler.created()
    assert node == bridge.scaler.created()[1].node
    wait_no_demand(bridge)
    assert scaled(bridge) == [("t4", 1), ("l4", 1)]  # nothing flapped back
    assert bridge.scaler.errors == []
    # every write went through with the chart's rights for the mode, and nothing else
    assert bridge.demand.metric("gpu_extender_demand_reconcile_errors_total") == 0
    created = bridge.demand.metric("gpu_extender_demand_created_total")
    assert created == (2 if bridge.mode == "utility-pods" else 4)  # a PodTemplate per request


def test_the_fake_autoscaler_answers_both_forms_with_gfd_labelled_kwok_nodes(
        controlplane_binaries: object, kwok_binary: Path) -> None:
    """The harness itself, without the controller: a ProvisioningRequest for two L4 nodes gets
    two kwok nodes and Provisioned=True, a check-capacity one none and Provisioned=False; a
    pending, Unschedulable utility pod one T4 node; a pod not matching the selector none."""
    from kubernetes import client

    with gpu_cluster() as cluster:
        kwok = Kwok.start(cluster, kwok_binary)
        apply_provisioning_request_crd(cluster)
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": PRODUCT_LABEL, "operator": "In", "values": ["NVIDIA-L4", "nvidia-l4"]}
            ]}]}}}
        spec = {"containers": [{"name": "pause", "image": "registry.example/pause:1",
                                "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                "affinity": affinity}
        cluster.api().create_namespaced_pod_template(NAMESPACE, {
            "metadata": {"name": "l4-x2"}, "template": {"spec": spec}})
        custom = client.CustomObjectsApi(cluster.api_client())
        custom.create_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", NAMESPACE, "provisioningrequests", {
                "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                "metadata": {"name": "l4-x2", "labels": {"gpu-extender.io/demand": "true"}},
                "spec": {"provisioningClassName":
                         "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                         "podSets": [{"podTemplateRef": {"name": "l4-x2"}, "count": 2}]}})
        custom.create_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", NAMESPACE, "provisioningrequests", {
                "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                "metadata": {"name": "check-only"},
                "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                         "podSets": [{"podTemplateRef": {"name": "l4-x2"}, "count": 1}]}})
        utility = gpu_pod("utility-t4", {"nvidia.com/gpu": 1},
                          labels={"gpu-extender.io/demand": "true"},
                          node_selector={PRODUCT_LABEL: "Tesla-T4"})
        stranger = gpu_pod("stranger", {"nvidia.com/gpu": 1},
                           node_selector={PRODUCT_LABEL: "NVIDIA-L40S"})
        create_pods(cluster, [utility, stranger])
        with FakeAutoscaler(cluster, kwok, utility_selector=DEMAND_SELECTOR).running() as scaler:
            cluster.wait_for(lambda: len(scaler.created()) >= 3, timeout_s=TIMEOUT_S,
                             description="three scale-ups")
            assert wait_bound(cluster, "utility-t4", TIMEOUT_S).startswith("scaled-")
        assert sorted(scaled_of(scaler)) == [("l4", 1), ("l4", 1), ("t4", 1)]
        node = cluster.api().read_node(next(u.node for u in scaler.created()
                                            if u.type_id == "t4"))
        assert node.metadata.labels["nvidia.com/gpu.memory"] == "15360"
        assert node.metadata.labels["nvidia.com/gpu.count"] == "1"
        assert node.status.capacity["nvidia.com/gpu"] == "1"
        request = custom.get_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", NAMESPACE, "provisioningrequests", "l4-x2")
        assert {c["type"]: c["status"] for c in request["status"]["conditions"]} == {
            "Accepted": "True", "Provisioned": "True"}
        checked = custom.get_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1", NAMESPACE, "provisioningrequests", "check-only")
        assert {c["type"]: c["status"] for c in checked["status"]["conditions"]} == {
            "Accepted": "True", "Provisioned": "False"}  # and no node (three scale-ups above)
        assert not cluster.api().read_namespaced_pod("stranger", NAMESPACE).spec.node_name
        assert scaler.errors == []


def scaled_of(scaler: FakeAutoscaler) -> list[tuple[str, int]]:
    return [(up.type_id, up.gpus) for up in scaler.created()]
