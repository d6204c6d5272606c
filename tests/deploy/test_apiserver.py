"""The chart against the real kube-apiserver (the local control plane): every rendering
through server-side dry run (admission, schema validation, RBAC escalation checks), then
`helm install`, `upgrade` and `rollback` for real; and the scheduler profile the chart carries
driving the real kube-scheduler and extender."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from localcluster import LocalCluster
from localcluster.helm import CHART, Helm
from tests.deploy.conftest import RENDERINGS, SWITCHES_ON
from tests.e2e.gpu_helpers import create_pods, extender_spec, gpu_pod, wait_bound

pytestmark = pytest.mark.deploy

DRY_RUN_NAMESPACE = "check-deploy"
# Custom resources of operators the local control plane does not run: rendered and linted, but
# the apiserver has no schema to check them against.
NOT_SERVED = {("monitoring.coreos.com/v1", "ServiceMonitor"), ("cert-manager.io/v1", "Certificate")}


@pytest.fixture(scope="module")
def cluster(controlplane_binaries: object) -> Iterator[LocalCluster]:
    with LocalCluster() as local:
        local.api().create_namespace({"metadata": {"name": DRY_RUN_NAMESPACE}})
        yield local


def _dry_run_create(api: dynamic.DynamicClient, document: dict[str, Any],
                    api_client: client.ApiClient) -> None:
    """POST with dryRun=All and fieldValidation=Strict: an unknown or misspelt field is an
    error, not a dropped field with a warning (the client library's default)."""
    resource = api.resources.get(api_version=document["apiVersion"], kind=document["kind"])
    namespace = document["metadata"].get("namespace") if resource.namespaced else None
    api_client.call_api(
        resource.path(namespace=namespace), "POST", body=document,
        query_params=[("dryRun", "All"), ("fieldValidation", "Strict")],
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        auth_settings=["BearerToken"], _preload_content=False)


def dry_run_all(cluster: LocalCluster, documents: list[dict[str, Any]], name: str) -> list[str]:
    """Every served document through ``_dry_run_create``: the kinds checked, or the test fails
    naming the refused object and the apiserver's answer."""
    api = dynamic.DynamicClient(cluster.api_client())
    checked = []
    for document in documents:
        if (document["apiVersion"], document["kind"]) in NOT_SERVED:
            continue
        try:
            _dry_run_create(api, document, cluster.api_client())
        except ApiException as error:
            pytest.fail(f"{name}: {document['kind']}/{document['metadata']['name']} refused by "
                        f"the apiserver: {error.body}", pytrace=False)
        checked.append(document["kind"])
    return checked


@pytest.mark.parametrize("index", range(len(RENDERINGS)), ids=[n for n, _, _ in RENDERINGS])
def test_every_rendering_passes_server_side_dry_run(
        helm: Helm, cluster: LocalCluster, index: int) -> None:
    name, files, sets = RENDERINGS[index]
    documents = helm.documents(values_files=files, set_values=sets, release=f"r{index}",
                               namespace=DRY_RUN_NAMESPACE)
    checked = dry_run_all(cluster, documents, name)
    assert {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
            "ConfigMap", "PodDisruptionBudget"} <= set(checked)
    if name.startswith("switches-on"):
        assert {"DaemonSet", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                "Service"} <= set(checked)


def test_dry_run_is_strict(helm: Helm, cluster: LocalCluster) -> None:
    """The check above can fail: a misspelt field in a rendered Deployment is refused."""
    documents = helm.documents(release="strict", namespace=DRY_RUN_NAMESPACE)
    deployment = next(doc for doc in documents if doc["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = {}
    with pytest.raises(ApiException) as refused:
        _dry_run_create(dynamic.DynamicClient(cluster.api_client()), deployment,
                        cluster.api_client())
    assert "livenessProbes" in str(refused.value.body)


def test_helm_install_upgrade_and_rollback_for_real(helm: Helm, cluster: LocalCluster) -> None:
    kubeconfig = cluster.kubeconfig()
    namespace, release = "gpu-install", "gpu"
    helm.run("install", release, str(CHART), "--namespace", namespace, "--create-namespace",
             kubeconfig=kubeconfig)
    apps = client.AppsV1Api(cluster.api_client())
    deployment = apps.read_namespaced_deployment("gpu-gpu-extender", namespace)
    assert deployment.spec.replicas == 1
    containers = {c.name for c in deployment.spec.template.spec.containers}
    assert containers == {"kube-scheduler", "gpu-extender"}
    rbac = client.RbacAuthorizationV1Api(cluster.api_client())
    binding = rbac.read_cluster_role_binding("gpu-gpu-extender")
    assert binding.subjects[0].name == "gpu-gpu-extender"
    assert binding.subjects[0].namespace == namespace

    helm.run("upgrade", release, str(CHART), "--namespace", namespace, "--reuse-values",
             "--set", "replicas=2", kubeconfig=kubeconfig)
    assert apps.read_namespaced_deployment("gpu-gpu-extender", namespace).spec.replicas == 2
    helm.run("rollback", release, "1", "--namespace", namespace, kubeconfig=kubeconfig)
    assert apps.read_namespaced_deployment("gpu-gpu-extender", namespace).spec.replicas == 1
    history = yaml.safe_load(helm.run("history", release, "--namespace", namespace,
                                      "--output", "yaml", kubeconfig=kubeconfig))
    assert [entry["revision"] for entry in history] == [1, 2, 3]
    helm.run("uninstall", release, "--namespace", namespace, kubeconfig=kubeconfig)
    with pytest.raises(ApiException) as gone:
        rbac.read_cluster_role_binding("gpu-gpu-extender")
    assert gone.value.status == 404


def test_extender_service_upgrade_keeps_the_generated_certificate(
        helm: Helm, cluster: LocalCluster) -> None:
    """The CAs the control plane was given (the extender's, and the webhook's in the webhook
    configurations) must survive `helm upgrade` (lookup, not regenerate). Installed for real
    with the agent, webhook and shadow on: the apiserver creates every object."""
    kubeconfig = cluster.kubeconfig()
    namespace = "gpu-service"
    switches = [arg for assignment in SWITCHES_ON for arg in ("--set", assignment)]
    helm.run("install", "svc", str(CHART), "--namespace", namespace, "--create-namespace",
             "--set", "mode=extender-service", *switches, kubeconfig=kubeconfig)
    core = cluster.api()
    admission = client.AdmissionregistrationV1Api(cluster.api_client())

    def webhook_ca_bundles() -> list[str]:
        configs = [admission.read_mutating_webhook_configuration("svc-gpu-extender-webhook"),
                   admission.read_validating_webhook_configuration("svc-gpu-extender-webhook")]
        return [hook.client_config.ca_bundle for config in configs for hook in config.webhooks]

    before = core.read_namespaced_secret("svc-gpu-extender-tls", namespace).data
    webhook_before = core.read_namespaced_secret("svc-gpu-extender-webhook-tls", namespace).data
    bundles_before = webhook_ca_bundles()
    helm.run("upgrade", "svc", str(CHART), "--namespace", namespace, "--reuse-values",
             "--set", "replicas=2", kubeconfig=kubeconfig)
    after = core.read_namespaced_secret("svc-gpu-extender-tls", namespace).data
    assert after == before
    assert core.read_namespaced_secret("svc-gpu-extender-webhook-tls",
                                       namespace).data == webhook_before
    # mutate, validate, and the node agent's evictions (the agent is on)
    assert webhook_ca_bundles() == bundles_before == [webhook_before["ca.crt"]] * 3
    assert client.AppsV1Api(cluster.api_client()).read_namespaced_daemon_set(
        "svc-gpu-extender-agent", namespace).spec.template.spec.host_pid is True
    ca = core.read_namespaced_config_map("svc-gpu-extender-ca", namespace).data["ca.crt"]
    assert ca.strip().encode() == __import__("base64").b64decode(before["ca.crt"]).strip()
    for data in (before, webhook_before):
        _assert_p256_leaf_of_its_ca(data)


def _assert_p256_leaf_of_its_ca(data: dict[str, str]) -> None:
    """The generated serving key is ECDSA P-256 (every handshake signs with it: cheaper than
    RSA 2048), and the certificate is the CA's and the key's."""
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = serialization.load_pem_private_key(base64.b64decode(data["tls.key"]), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    leaf = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
    ca = x509.load_pem_x509_certificate(base64.b64decode(data["ca.crt"]))
    leaf.verify_directly_issued_by(ca)
    assert leaf.public_key() == key.public_key()


def test_an_expiring_generated_certificate_is_reissued_from_the_kept_ca(
        helm: Helm, cluster: LocalCluster) -> None:
    """A certificate valid for 10 days with renewBeforeDays 30 is due at once: the upgrade
    re-issues it (new serving certificate and not-after), from the same CA (ca.crt, the Secret
    <name>-ca and the webhook's caBundle unchanged), so nothing the control plane trusts
    breaks."""
    kubeconfig = cluster.kubeconfig()
    namespace = "gpu-renew"
    helm.run("install", "renew", str(CHART), "--namespace", namespace, "--create-namespace",
             "--set", "mode=extender-service", "--set", "webhook.enabled=true",
             "--set", "tls.validityDays=10", "--set", "tls.renewBeforeDays=30",
             kubeconfig=kubeconfig)
    core = cluster.api()

    def secrets() -> dict[str, tuple[dict[str, str], dict[str, str]]]:
        names = ("renew-gpu-extender-tls", "renew-gpu-extender-tls-ca",
                 "renew-gpu-extender-webhook-tls", "renew-gpu-extender-webhook-tls-ca")
        out = {}
        for name in names:
            secret = core.read_namespaced_secret(name, namespace)
            out[name] = (secret.data, secret.metadata.annotations or {})
        return out

    before = secrets()
    helm.run("upgrade", "renew", str(CHART), "--namespace", namespace, "--reuse-values",
             kubeconfig=kubeconfig)
    after = secrets()
    for leaf in ("renew-gpu-extender-tls", "renew-gpu-extender-webhook-tls"):
        (old, old_notes), (new, new_notes) = before[leaf], after[leaf]
        assert new["tls.crt"] != old["tls.crt"], f"{leaf} was not re-issued"
        assert new["ca.crt"] == old["ca.crt"], f"{leaf}: the CA changed"
        assert new_notes["gpu-extender.io/not-after"] >= old_notes["gpu-extender.io/not-after"]
        assert after[f"{leaf}-ca"][0] == before[f"{leaf}-ca"][0], f"{leaf}-ca changed"
    # Not due (the default 365 days): the next upgrade keeps the certificate as it is.
    helm.run("upgrade", "renew", str(CHART), "--namespace", namespace, "--reuse-values",
             "--set", "tls.validityDays=365", kubeconfig=kubeconfig)
    kept = secrets()
    helm.run("upgrade", "renew", str(CHART), "--namespace", namespace, "--reuse-values",
             kubeconfig=kubeconfig)
    assert secrets() == kept
    helm.run("uninstall", "renew", "--namespace", namespace, kubeconfig=kubeconfig)


def test_the_charts_scheduler_profile_schedules_with_the_real_scheduler(
        helm: Helm, controlplane_binaries: object, tmp_path: Path) -> None:
    documents = helm.documents()
    config_map = next(doc for doc in documents if doc["kind"] == "ConfigMap"
                      and doc["metadata"]["name"] == "gpu-extender-scheduler-config")
    profile = tmp_path / "config.yaml"
    profile.write_text(config_map["data"]["config.yaml"])
    with LocalCluster(profile, extender_spec()) as local:
        local.create_node("gpu-0", {"nvidia.com/gpu": 2},
                          labels={"nvidia.com/gpu.product": "Tesla-T4"})
        create_pods(local, [gpu_pod("from-chart-profile", {"nvidia.com/gpu": 1})])
        assert wait_bound(local, "from-chart-profile") == "gpu-0"
