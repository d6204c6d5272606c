"""The Helm chart, rendered by the real helm binary: lint, every preset in both modes, the
properties every rendering must have, and manifests/ as the generated default rendering."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.binaries import REPO_ROOT
from localcluster.helm import CHART, PRESETS, Helm, HelmError, default_manifests
from tests.deploy.conftest import RENDERINGS

pytestmark = pytest.mark.deploy

HARDENED = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
            "privileged": False, "capabilities": {"drop": ["ALL"]}}


def _of_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents if doc["kind"] == kind]


def _pod_specs(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [doc["spec"]["template"]["spec"] for doc in _of_kind(documents, "Deployment")]


def _containers(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for spec in _pod_specs(documents) for c in spec["containers"]]


@pytest.mark.parametrize("values", [None, *PRESETS], ids=lambda p: p.name if p else "default")
def test_helm_lint_passes(helm: Helm, values: Path | None) -> None:
    args = ["lint", "--strict", str(CHART)] + (["--values", str(values)] if values else [])
    assert "0 chart(s) failed" in helm.run(*args)


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_every_probe_targets_the_pod_not_the_node(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    """httpGet without `host` goes to the pod IP; a `host` (127.0.0.1 in the old manifest)
    would send the kubelet's probe to the node. Named ports must exist on the container."""
    probed = 0
    for container in _containers(renderings[name]):
        port_names = {port["name"] for port in container.get("ports", [])}
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            probe = container.get(kind)
            if probe is None:
                continue
            probed += 1
            [action] = [a for a in ("httpGet", "tcpSocket", "exec") if a in probe]
            if action != "exec":
                assert "host" not in probe[action], f"{container['name']}.{kind}"
                port = probe[action]["port"]
                assert isinstance(port, int) or port in port_names, \
                    f"{container['name']}.{kind}: port {port!r} not among {port_names}"
        assert "readinessProbe" in container and "livenessProbe" in container, container["name"]
    assert probed >= 3


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_extender_probes_use_the_monitoring_listener_it_starts(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    """The probes' port is the one --monitoring-address binds on all addresses, and readiness
    asks /readyz (false until the first full sync)."""
    extender = next(c for c in _containers(renderings[name]) if c["name"] == "gpu-extender")
    monitoring = next(p for p in extender["ports"] if p["name"] == "monitoring")
    assert f"--monitoring-address=0.0.0.0:{monitoring['containerPort']}" in extender["args"]
    assert extender["readinessProbe"]["httpGet"]["path"] == "/readyz"


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_every_container_is_hardened_and_bounded(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    for spec in _pod_specs(renderings[name]):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in spec["containers"]:
            assert container["securityContext"] == HARDENED, container["name"]
            assert container["resources"]["requests"]["cpu"], container["name"]
            assert container["resources"]["limits"]["memory"], container["name"]
            assert "@sha256:" in container["image"] or ":" in container["image"].rsplit("/")[-1]


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_rendered_platform_config_passes_check_config(
        renderings: dict[str, list[dict[str, Any]]], name: str, tmp_path: Path) -> None:
    config_map = next(doc for doc in _of_kind(renderings[name], "ConfigMap")
                      if doc["metadata"]["name"].endswith("-platform"))
    path = tmp_path / "platform.yaml"
    path.write_text(config_map["data"]["platform.yaml"])
    result = subprocess.run([sys.executable, "-m", "extender", "check-config", str(path)],
                            capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK" in result.stdout


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_scheduler_config_points_at_the_extender_the_chart_runs(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    documents = renderings[name]
    config_map = next(doc for doc in _of_kind(documents, "ConfigMap")
                      if doc["metadata"]["name"].endswith("-scheduler-config"))
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert config["kind"] == "KubeSchedulerConfiguration"
    [extender] = config["extenders"]
    container = next(c for c in _containers(documents) if c["name"] == "gpu-extender")
    port = next(p["containerPort"] for p in container["ports"] if p["name"] in ("http", "https"))
    if any(d["kind"] == "Service" and d["metadata"]["name"] == container_service(documents)
           for d in documents):
        service = next(d for d in _of_kind(documents, "Service")
                       if d["metadata"]["name"] == container_service(documents))
        host = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
        assert extender["urlPrefix"] == f"https://{host}:{service['spec']['ports'][0]['port']}"
        assert extender["enableHTTPS"] is True
        assert extender["tlsConfig"]["serverName"] == host
        assert "--tls-cert-file=/etc/gpu-extender-tls/tls.crt" in container["args"]
        assert ("certFile" in extender["tlsConfig"]) == any(
            a.startswith("--client-ca-file=") for a in container["args"])
    else:
        assert extender["urlPrefix"] == f"http://127.0.0.1:{port}"
        assert "--host=127.0.0.1" in container["args"]


def container_service(documents: list[dict[str, Any]]) -> str:
    """The verbs Service's name (extender-service mode): the extender Deployment's name."""
    return str(next(doc["metadata"]["name"] for doc in _of_kind(documents, "Deployment")
                    if any(c["name"] == "gpu-extender"
                           for c in doc["spec"]["template"]["spec"]["containers"])))


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_pdb_and_metrics_service_select_only_the_extender_pods(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    documents = renderings[name]
    extender = next(doc for doc in _of_kind(documents, "Deployment")
                    if doc["metadata"]["name"] == container_service(documents))
    pod_labels = extender["spec"]["template"]["metadata"]["labels"]
    others = [doc["spec"]["template"]["metadata"]["labels"] for doc in documents
              if doc["kind"] in ("Deployment", "DaemonSet") and doc is not extender]
    selectors = [doc["spec"]["selector"]["matchLabels"] for doc in
                 _of_kind(documents, "PodDisruptionBudget")]
    selectors += [doc["spec"]["selector"] for doc in _of_kind(documents, "Service")
                  if doc["metadata"]["name"].endswith("-metrics")]
    for selector in selectors:
        assert selector.items() <= pod_labels.items()
        for labels in others:
            assert not selector.items() <= labels.items(), (selector, labels)


def test_agent_daemonset_runs_on_every_gpu_node_locked_down(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    [daemonset] = _of_kind(renderings["agent-and-webhook-second-scheduler"], "DaemonSet")
    spec = daemonset["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert container["args"][0] == "agent"
    assert container["securityContext"] == HARDENED
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in \
        spec["tolerations"]
    assert any(e["name"] == "NODE_NAME" for e in container["env"])


def test_webhook_is_served_with_the_ca_it_is_registered_with(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    documents = renderings["agent-and-webhook-second-scheduler"]
    [config] = _of_kind(documents, "MutatingWebhookConfiguration")
    [hook] = config["webhooks"]
    secret = next(d for d in _of_kind(documents, "Secret")
                  if d["metadata"]["name"].endswith("-webhook-tls"))
    assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    webhook = next(c for c in _containers(documents) if c["name"] == "webhook")
    assert webhook["args"][:2] == ["webhook", "--config=/etc/gpu-extender/platform.yaml"]
    assert "--tls-cert-file=/etc/gpu-extender-tls/tls.crt" in webhook["args"]
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system"]


def test_chart_managed_resources_match_the_shipped_scheduler_config(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    shipped = yaml.safe_load(
        (REPO_ROOT / "scheduler-config" / "gpu-scheduler-profile.yaml").read_text())
    config_map = next(doc for doc in _of_kind(renderings["default-second-scheduler"],
                                              "ConfigMap")
                      if doc["metadata"]["name"].endswith("-scheduler-config"))
    rendered = yaml.safe_load(config_map["data"]["config.yaml"])
    assert rendered["extenders"][0]["managedResources"] == \
        shipped["extenders"][0]["managedResources"]


def test_extender_service_mode_has_its_own_least_privilege_account(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    documents = renderings["default-extender-service"]
    bindings = _of_kind(documents, "ClusterRoleBinding") + _of_kind(documents, "RoleBinding")
    assert [b["roleRef"]["name"] for b in bindings] == ["gpu-extender"]
    assert not _of_kind(documents, "Role")
    [policy] = _of_kind(documents, "NetworkPolicy")
    verbs_rule = policy["spec"]["ingress"][0]
    assert verbs_rule["ports"] == [{"port": "https", "protocol": "TCP"}]
    assert verbs_rule["from"], "the verbs port must not be open to every pod"


def test_second_scheduler_mode_runs_no_networkpolicy_or_tls_service(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    kinds = {doc["kind"] for doc in renderings["default-second-scheduler"]}
    assert "NetworkPolicy" not in kinds and "Secret" not in kinds
    services = [d["metadata"]["name"] for d in
                _of_kind(renderings["default-second-scheduler"], "Service")]
    assert services == ["gpu-extender-metrics"]


def test_image_digest_wins_over_the_tag(renderings: dict[str, list[dict[str, Any]]]) -> None:
    extender = next(c for c in _containers(renderings["everything-on-extender-service"])
                    if c["name"] == "gpu-extender")
    assert extender["image"] == "ghcr.io/gpu-extender/gpu-extender@sha256:" + "0" * 64


@pytest.mark.parametrize(("sets", "message"), [
    (["mode=sidecar"], "at '/mode': value must be one of 'second-scheduler', "
                       "'extender-service'"),
    (["replica=2"], "at '': additional properties 'replica' not allowed"),
    (["extender.port=0"], "at '/extender/port': minimum: got 0, want 1"),
    (["image.digest=latest"], "at '/image/digest'"),
    (["replicas=2", "leaderElection.enabled=false"], "replicas: 2 needs leaderElection"),
    (["mode=extender-service", "tls.source=existing"], "tls.existingSecret is required"),
    (["tls.source=vault"], "at '/tls/source': value must be one of 'generate', "
                           "'certManager', 'existing'"),
], ids=["unknown mode", "misspelt key", "port out of range", "digest not sha256",
        "replicas without leader election", "existing without secret", "unknown tls source"])
def test_bad_values_fail_naming_the_value(helm: Helm, sets: list[str], message: str) -> None:
    with pytest.raises(HelmError) as refused:
        helm.template(set_values=sets)
    assert message in str(refused.value)


def test_manifests_are_the_generated_default_rendering(helm: Helm) -> None:
    for path, expected in default_manifests(helm).items():
        assert path.read_text() == expected, \
            f"{path.relative_to(REPO_ROOT)} drifted from the chart: run `make manifests`"


def test_dashboard_configmap_carries_the_dashboard_for_the_grafana_sidecar(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    import json

    [config_map] = [doc for doc in _of_kind(renderings["everything-on-extender-service"],
                                            "ConfigMap")
                    if doc["metadata"]["name"].endswith("-dashboard")]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads((CHART / "dashboards" / "gpu-extender.json").read_text())
    assert json.loads(config_map["data"]["gpu-extender.json"]) == shipped
