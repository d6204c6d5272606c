"""DRA interop on the real kube-scheduler 1.36 (DRA GA, DRAExtendedResource beta and on by
default): no DRA driver runs here, so the test publishes ResourceSlices and the DeviceClass as
the NVIDIA driver would; kube-scheduler creates and allocates each pod's extended-resource claim
in PreBind (no kubelet or kube-controller-manager is needed for that), then calls the
extender's bind, which records the device DRA allocated. The extender runs with the shipped
RBAC (manifests/rbac.yaml)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from localcluster import LocalCluster
from localcluster.binaries import REPO_ROOT
from localcluster.network import free_port
from tests.dra_objects import device_class, gpus, resource_slice
from tests.e2e.gpu_helpers import (
    NAMESPACE,
    assignment,
    create_pods,
    gpu_cluster,
    gpu_pod,
    wait_bound,
    wait_rejected,
)
from tests.e2e.webhook_helpers import Webhook, make_certs

pytestmark = pytest.mark.e2e
E2E_DATA = Path(__file__).parent / "data"
A100 = "NVIDIA A100-SXM4-80GB"
DEFAULT_CONFIG = REPO_ROOT / "extender" / "config" / "default.yaml"


def resource_api(cluster: LocalCluster) -> client.ResourceV1Api:
    return client.ResourceV1Api(cluster.api_client())


def make_dra_fleet(cluster: LocalCluster) -> None:
    """A DRA-managed T4 node and A100 node (two GPUs each, in ResourceSlices, no
    nvidia.com/gpu allocatable) and a device-plugin L4 node (two GPUs)."""
    api = resource_api(cluster)
    api.create_device_class(device_class())
    for node, product, memory in (("t4-dra", "Tesla T4", "15Gi"), ("a100-dra", A100, "80Gi")):
        cluster.create_node(node)
        api.create_resource_slice(resource_slice(node, gpus(node, product, 2, memory)))
    cluster.create_node("l4-0", {"nvidia.com/gpu": 2},
                        labels={"nvidia.com/gpu.product": "NVIDIA-L4"})


def inventory(cluster: LocalCluster) -> dict[str, Any]:
    with urllib.request.urlopen(f"{cluster.extender_url}/debug/inventory", timeout=10) as answer:
        document: dict[str, Any] = json.loads(answer.read())
    return document


def wait_dra_nodes(cluster: LocalCluster, *names: str) -> None:
    def known() -> bool:
        nodes = {n["name"]: n for n in inventory(cluster)["nodes"]}
        return all(name in nodes and nodes[name].get("draDevices") for name in names)
    cluster.wait_for(known, timeout_s=60, description=f"DRA nodes {names} in the inventory")


def claim_devices(cluster: LocalCluster) -> dict[str, list[tuple[str, str]]]:
    """Pod name -> the (pool, device) its extended-resource claim was allocated."""
    out: dict[str, list[tuple[str, str]]] = {}
    claims = resource_api(cluster).list_namespaced_resource_claim(NAMESPACE).items
    for item in claims:
        owner = next((o.name for o in item.metadata.owner_references or [] if o.kind == "Pod"),
                     item.metadata.name)
        allocation = item.status.allocation if item.status else None
        results = allocation.devices.results if allocation and allocation.devices else []
        out[owner] = [(r.pool, r.device) for r in results or []]
    return out


def claim_names(cluster: LocalCluster, pod: str) -> list[str]:
    claims = resource_api(cluster).list_namespaced_resource_claim(NAMESPACE).items
    return [c.metadata.name for c in claims
            if any(o.name == pod for o in c.metadata.owner_references or [])]


def slice_uuid(node: str, device: str) -> str:
    return f"GPU-{node}-{device.removeprefix('gpu-')}"  # as tests.dra_objects.gpus names them


def test_dra_gpus_are_placed_cheapest_first_never_on_protected_types_and_recorded(
        controlplane_binaries: object) -> None:
    with gpu_cluster(extender_config=E2E_DATA / "cheapest-first.yaml") as cluster:
        make_dra_fleet(cluster)
        wait_dra_nodes(cluster, "t4-dra", "a100-dra")
        # Untyped: the two DRA T4s first (0.53 $/h), then the device-plugin L4s (0.80); the
        # DRA A100s are protected, although DRA alone would have taken them.
        nodes = []
        for i in range(4):
            create_pods(cluster, [gpu_pod(f"untyped-{i}", {"nvidia.com/gpu": 1})])
            nodes.append(wait_bound(cluster, f"untyped-{i}", timeout_s=120))
        assert nodes == ["t4-dra", "t4-dra", "l4-0", "l4-0"]
        # Typed a100-80gb: the DRA A100 node, and assigned names the device DRA allocated.
        create_pods(cluster, [gpu_pod("typed", {"nvidia.com/gpu": 1},
                                      labels={"gpu-extender.io/accelerator": "a100-80gb"})])
        assert wait_bound(cluster, "typed", timeout_s=120) == "a100-dra"
        devices = claim_devices(cluster)
        for pod, node in (("untyped-0", "t4-dra"), ("untyped-1", "t4-dra"),
                          ("typed", "a100-dra")):
            (pool, device), = devices[pod]
            assert pool == node
            recorded = assignment(cluster.api(), pod)
            grant, = recorded.grants
            assert recorded.node == node and grant.whole
            assert grant.uuid == slice_uuid(node, device)
        # No device allocated twice, by DRA or in the extender's books.
        allocated = [d for results in devices.values() for d in results]
        assert len(allocated) == len(set(allocated)) == 3
        books = {n["name"]: n for n in inventory(cluster)["nodes"]}
        assert [g["pods"] for g in books["t4-dra"]["gpus"]] == [1, 1]
        # `inspect --kubeconfig` rebuilds the same books from the API, DRA objects included.
        shown = subprocess.run(
            [sys.executable, "-m", "extender", "inspect", "-o", "json", "--kubeconfig",
             str(cluster.kubeconfig())], check=True, capture_output=True, text=True,
            cwd=REPO_ROOT).stdout
        rebuilt = {n["name"]: n for n in json.loads(shown)["nodes"]}
        assert [g["pods"] for g in rebuilt["t4-dra"]["gpus"]] == [1, 1]
        assert {h["pod"] for h in rebuilt["a100-dra"]["holdings"]} >= {
            f"{NAMESPACE}/{name} (ResourceClaim)" for name in claim_names(cluster, "typed")}
        # The T4s and L4s are full and the A100 left is protected: the next untyped pod waits.
        create_pods(cluster, [gpu_pod("overflow", {"nvidia.com/gpu": 1})])
        assert "protected" in wait_rejected(cluster, "overflow", timeout_s=120)


def test_a_vram_share_is_never_placed_on_a_dra_gpu(controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        make_dra_fleet(cluster)
        wait_dra_nodes(cluster, "t4-dra", "a100-dra")
        create_pods(cluster, [gpu_pod("share", {"gpu-extender.io/gpu-memory": "4Gi"})])
        assert wait_bound(cluster, "share", timeout_s=120) == "l4-0"


def register_claim_webhook(cluster: LocalCluster, webhook: Webhook) -> None:
    """The mutating webhook for ResourceClaims and ResourceClaimTemplates (its own
    configuration: the shipped one covers pods only)."""
    ca = base64.b64encode((webhook.certs / "ca.crt").read_bytes()).decode()
    client.AdmissionregistrationV1Api(cluster.api_client()).create_mutating_webhook_configuration({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "gpu-extender-dra-claims"},
        "webhooks": [{
            "name": "claims.gpu-extender.io", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 10,
            "clientConfig": {"url": f"{webhook.url}/mutate", "caBundle": ca},
            "rules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                       "operations": ["CREATE"],
                       "resources": ["resourceclaims", "resourceclaimtemplates"]}]}]})


def untyped_template(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com", "count": 1}}]}}}}


def test_the_webhook_rewrites_untyped_claims_so_dra_itself_takes_the_cheapest_gpu(
        controlplane_binaries: object, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    with gpu_cluster() as cluster:
        webhook = Webhook(cluster, certs, free_port())
        webhook.start(DEFAULT_CONFIG, "--dra-first-available")
        register_claim_webhook(cluster, webhook)
        api = resource_api(cluster)
        api.create_device_class(device_class())

        # The API server accepts the rewritten template: its CEL selectors compile.
        def rewritten() -> list[Any]:
            name = f"one-gpu-{len(created)}"
            created.append(name)
            api.create_namespaced_resource_claim_template(NAMESPACE, untyped_template(name))
            read = api.read_namespaced_resource_claim_template(name, NAMESPACE)
            request, = read.spec.spec.devices.requests
            return list(request.first_available or [])
        created: list[str] = []
        alternatives = cluster.wait_for(rewritten, timeout_s=30,
                                        description="the claim webhook to be active")
        names = [a.name for a in alternatives]
        assert names[:2] == ["t4", "l4"] and "a100-80gb" not in names

        # A claim-only pod (it never reaches the extender): DRA takes the T4, the first
        # alternative, although the A100 node is as free.
        for node, product, memory in (("a100-dra", A100, "80Gi"), ("t4-dra", "Tesla T4",
                                                                     "15Gi")):
            cluster.create_node(node)
            api.create_resource_slice(resource_slice(node, gpus(node, product, 2, memory)))
        api.create_namespaced_resource_claim(NAMESPACE, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "trainer-gpu"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com", "count": 1}}]}}})
        pod = gpu_pod("trainer", {})
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "trainer-gpu"}]
        pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
        create_pods(cluster, [pod])
        assert wait_bound(cluster, "trainer", timeout_s=120) == "t4-dra"
        claim = api.read_namespaced_resource_claim("trainer-gpu", NAMESPACE)
        result, = claim.status.allocation.devices.results
        assert (result.pool, result.request) == ("t4-dra", "gpu/t4")
        webhook.stop()
