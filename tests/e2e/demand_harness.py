"""The pieces an end-to-end run of ``gpu-extender demand`` needs around a local cluster: the
ProvisioningRequest CRD (ours, tests/data/crds), the controller's RBAC exactly as the chart
renders it per mode (manifests/demand-rbac-<mode>.yaml), a kubeconfig holding a token of its own
ServiceAccount (so a right it lacks fails the run), the process itself, and a view of the demand
objects it keeps."""

from __future__ import annotations

import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client, utils

from localcluster import LocalCluster
from localcluster.binaries import REPO_ROOT
from localcluster.helm import MANIFESTS
from localcluster.network import free_port, wait_until_ready
from localcluster.process import ManagedProcess

CRD = REPO_ROOT / "tests" / "data" / "crds" / "provisioningrequests.autoscaling.x-k8s.io.yaml"
CRD_NAME = "provisioningrequests.autoscaling.x-k8s.io"
DEMAND_ACCOUNT = "gpu-extender-demand"
DEMAND_NAMESPACE = "kube-system"  # the generated manifests' release namespace
DEMAND_SELECTOR = "gpu-extender.io/demand=true"
DEMAND_EVENT = "GpuDemandRequested"


def apply_provisioning_request_crd(cluster: LocalCluster) -> None:
    """Serve ``autoscaling.x-k8s.io/v1`` ProvisioningRequest, as a cluster running Cluster
    Autoscaler with --enable-provisioning-requests does."""
    extensions = client.ApiextensionsV1Api(cluster.api_client())
    extensions.create_custom_resource_definition(yaml.safe_load(CRD.read_text()))

    def established() -> bool:
        crd = extensions.read_custom_resource_definition(CRD_NAME)
        return any(c.type == "Established" and c.status == "True"
                   for c in (crd.status.conditions or []))

    cluster.wait_for(established, timeout_s=60, description="the CRD to be established")


def install_demand_rbac(cluster: LocalCluster, mode: str) -> None:
    """The controller's ServiceAccount, rights and PriorityClass as the chart renders them."""
    utils.create_from_yaml(cluster.api_client(),
                           yaml_file=str(MANIFESTS / f"demand-rbac-{mode}.yaml"))


def account_kubeconfig(cluster: LocalCluster, account: str, path: Path,
                       namespace: str = "kube-system") -> Path:
    """A kubeconfig holding a freshly minted token of ``namespace/account``."""
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    token = cluster.api().create_namespaced_service_account_token(
        account, namespace, request).status.token
    admin = yaml.safe_load(cluster.kubeconfig("admin").read_text())
    config = {"apiVersion": "v1", "kind": "Config",
              "clusters": admin["clusters"],
              "users": [{"name": account, "user": {"token": token}}],
              "contexts": [{"name": account, "context": {"cluster": "local", "user": account}}],
              "current-context": account}
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass(frozen=True)
class RunningDemand:
    process: ManagedProcess
    url: str

    def metric(self, name: str) -> float:
        """The sum of one metric's samples on /metrics (0 when absent)."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as response:
            text = response.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith((f"{name} ", f"{name}{{")))


def start_demand(cluster: LocalCluster, mode: str, kubeconfig: Path, *,
                 debounce_s: int = 2, cooldown_s: int = 5) -> RunningDemand:
    """``gpu-extender demand`` with the given identity, short debounce and cooldown, a pass a
    second; returns once its /readyz answers (first node and pod lists applied)."""
    port = free_port()
    process = cluster.start_process("demand", [
        sys.executable, "-m", "extender", "demand", "--kubeconfig", str(kubeconfig),
        "--mode", mode, "--leader-namespace", DEMAND_NAMESPACE,
        "--monitoring-address", f"127.0.0.1:{port}", "--debounce-seconds", str(debounce_s),
        "--cooldown-seconds", str(cooldown_s), "--interval", "1", "--log-level", "debug"],
        cwd=REPO_ROOT)
    url = f"http://127.0.0.1:{port}"
    wait_until_ready(process, f"{url}/readyz", 120.0)
    return RunningDemand(process, url)


def demand_objects(cluster: LocalCluster) -> list[str]:
    """``Kind/name`` of every demand object (utility pods, PodTemplates, ProvisioningRequests)."""
    api = cluster.api()
    names = [f"Pod/{p.metadata.name}" for p in api.list_pod_for_all_namespaces(
        label_selector=DEMAND_SELECTOR).items if not p.metadata.deletion_timestamp]
    names += [f"PodTemplate/{t.metadata.name}" for t in api.list_pod_template_for_all_namespaces(
        label_selector=DEMAND_SELECTOR).items]
    custom = client.CustomObjectsApi(cluster.api_client())
    requests = custom.list_cluster_custom_object("autoscaling.x-k8s.io", "v1",
                                                 "provisioningrequests",
                                                 label_selector=DEMAND_SELECTOR)
    names += [f"ProvisioningRequest/{r['metadata']['name']}" for r in requests["items"]]
    return names


def demand_events(cluster: LocalCluster, namespace: str, pod: str) -> list[str]:
    """The messages of the controller's events on one real pod."""
    return [str(e.message or "") for e in cluster.events_for_pod(namespace, pod)
            if e.reason == DEMAND_EVENT]
