"""The Helm chart, rendered by the real helm binary: lint, every preset in both modes, the
properties every rendering must have, and manifests/ as the generated default rendering."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.config import load_config_text
from extender.platform import Platform, build_platform
from localcluster.binaries import REPO_ROOT
from localcluster.helm import CHART, MANIFESTS, MODES, PRESETS, Helm, HelmError, default_manifests
from tests.builders import make_node
from tests.deploy.conftest import RENDERINGS, SWITCHES_ON

pytestmark = pytest.mark.deploy
P = pytest.param

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


@pytest.mark.parametrize("mode", MODES)
def test_helm_lint_passes_with_every_switch_on(helm: Helm, mode: str) -> None:
    args = ["lint", "--strict", str(CHART), "--set", ",".join((*SWITCHES_ON, f"mode={mode}"))]
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


def _plain(name: str) -> list[dict[str, Any]]:
    """A hand-written manifest in manifests/ (the proven settings the chart's switches follow)."""
    return [doc for doc in yaml.safe_load_all((MANIFESTS / name).read_text()) if doc]


def _named(documents: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    [document] = [doc for doc in _of_kind(documents, kind)
                  if doc["metadata"]["name"].endswith(suffix)]
    return document


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_every_gpu_extender_command_line_parses_with_the_real_cli(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    """Each container running the image is given flags its subcommand's argparse accepts
    (an unknown or misspelt flag exits 2 at start, a crash loop in the cluster)."""
    from extender.cli import build_parser

    documents = renderings[name]
    specs = _pod_specs(documents) + [d["spec"]["template"]["spec"]
                                     for d in _of_kind(documents, "DaemonSet")]
    commands = []
    for container in (c for spec in specs for c in spec["containers"]):
        if container["name"] == "kube-scheduler":
            continue
        try:
            args = build_parser().parse_args(container["args"])
        except SystemExit:
            pytest.fail(f"{name}: container {container['name']}: gpu-extender refuses "
                        f"{container['args']} (see the argparse error above)", pytrace=False)
        assert callable(args.run), container["name"]
        commands.append(container["args"][0])
    assert "serve" in commands


def test_agent_matches_the_plain_manifest(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    """Rights, own-node policy, host access and command line as manifests/agent.yaml, which
    tests/e2e/test_agent_rbac.py proves against a real apiserver; only names differ."""
    documents = renderings["switches-on-second-scheduler"]
    plain = _plain("agent.yaml")
    assert _named(documents, "ClusterRole", "-agent")["rules"] == \
        _named(plain, "ClusterRole", "-agent")["rules"]
    [binding] = [b for b in _of_kind(documents, "ClusterRoleBinding")
                 if b["roleRef"]["name"] == "gpu-extender-agent"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpu-extender-agent",
                                    "namespace": "kube-system"}]
    [policy] = _of_kind(documents, "ValidatingAdmissionPolicy")
    [plain_policy] = _of_kind(plain, "ValidatingAdmissionPolicy")
    assert policy["spec"] == plain_policy["spec"]  # release gpu-extender in kube-system
    [policy_binding] = _of_kind(documents, "ValidatingAdmissionPolicyBinding")
    assert policy_binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert policy_binding["spec"]["validationActions"] == ["Deny"]

    [daemonset] = _of_kind(documents, "DaemonSet")
    [plain_daemonset] = _of_kind(plain, "DaemonSet")
    spec, plain_spec = (d["spec"]["template"]["spec"] for d in (daemonset, plain_daemonset))
    [container], [plain_container] = spec["containers"], plain_spec["containers"]
    assert spec["hostPID"] is True
    assert spec["serviceAccountName"] == "gpu-extender-agent"
    assert container["args"] == plain_container["args"]
    assert container["env"] == plain_container["env"]
    assert container["ports"] == plain_container["ports"]
    assert spec["affinity"] == plain_spec["affinity"]
    assert spec["tolerations"] == plain_spec["tolerations"]
    assert container["securityContext"] == HARDENED
    assert spec["securityContext"]["runAsUser"] == 0  # the root-only PodResources socket
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for mount in plain_container["volumeMounts"]:
        assert mounts[mount["mountPath"]]["readOnly"] is True
    host_paths = {v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert host_paths == {"/proc", "/var/lib/kubelet/pod-resources"}
    config = yaml.safe_load(_named(documents, "ConfigMap", "-agent")["data"]["agent.yaml"])
    assert config["platformConfig"] == "/etc/gpu-extender/platform.yaml"
    assert mounts["/etc/gpu-extender"]["readOnly"] is True
    assert config["metricsPort"] == container["ports"][0]["containerPort"]


def test_agent_config_passes_the_agents_own_validation(
        renderings: dict[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    from extender.agent.config import load_agent_config

    documents = renderings["switches-on-second-scheduler"]
    platform = tmp_path / "platform.yaml"
    platform.write_text(_named(documents, "ConfigMap", "-platform")["data"]["platform.yaml"])
    text = _named(documents, "ConfigMap", "-agent")["data"]["agent.yaml"]
    agent = tmp_path / "agent.yaml"
    agent.write_text(text.replace("/etc/gpu-extender/platform.yaml", str(platform)))
    config = load_agent_config(agent)
    assert (config.overuse_policy, config.overuse_tolerance_mib) == ("warn", 256)


@pytest.mark.parametrize("name", ["switches-on-second-scheduler",
                                  "switches-on-cert-manager-extender-service",
                                  "webhook-existing-secret-second-scheduler"])
def test_webhook_matches_the_plain_manifest_and_is_served_with_its_ca(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    documents = renderings[name]
    plain = _plain("webhook.yaml")
    namespace = _named(documents, "Deployment", "-webhook")["metadata"]["namespace"]
    webhook = next(c for c in _containers(documents) if c["name"] == "webhook")
    volumes = {v["name"]: v for v in
               _named(documents, "Deployment", "-webhook")["spec"]["template"]["spec"]["volumes"]}
    secret_name = volumes["tls"]["secret"]["secretName"]
    for kind, path in (("MutatingWebhookConfiguration", "/mutate"),
                       ("ValidatingWebhookConfiguration", "/validate")):
        [config], [plain_config] = _of_kind(documents, kind), _of_kind(plain, kind)
        main = f"{path[1:]}.gpu-extender.io"
        [hook] = [h for h in config["webhooks"] if h["name"] == main]
        [plain_hook] = [h for h in plain_config["webhooks"] if h["name"] == main]
        assert hook["name"] == plain_hook["name"]
        assert hook["clientConfig"]["service"]["path"] == path
        assert hook["clientConfig"]["service"]["port"] == 443
        for key in ("rules", "sideEffects", "timeoutSeconds", "failurePolicy", "matchPolicy",
                    "admissionReviewVersions"):
            assert hook[key] == plain_hook[key], key
        assert hook.get("reinvocationPolicy") == plain_hook.get("reinvocationPolicy")
        [names, opt_out] = hook["namespaceSelector"]["matchExpressions"]
        assert names["operator"] == "NotIn" and {"kube-system", namespace} <= set(names["values"])
        assert opt_out == plain_hook["namespaceSelector"]["matchExpressions"][1]
        if name.startswith("switches-on-cert-manager"):
            certificate = _named(documents, "Certificate", "-webhook")
            assert certificate["spec"]["secretName"] == secret_name
            assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
                f"{namespace}/{certificate['metadata']['name']}"
            assert "caBundle" not in hook["clientConfig"]
            host = f"{hook['clientConfig']['service']['name']}.{namespace}.svc"
            assert host in certificate["spec"]["dnsNames"]
        elif name.startswith("webhook-existing"):
            assert secret_name == "hook-tls"
            assert hook["clientConfig"]["caBundle"]
        else:
            secret = _named(documents, "Secret", "-webhook-tls")
            assert secret["metadata"]["name"] == secret_name
            assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    service = _named(documents, "Service", "-webhook")
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https",
                                         "protocol": "TCP"}]
    assert service["spec"]["selector"].items() <= \
        _named(documents, "Deployment", "-webhook")["spec"]["template"]["metadata"][
            "labels"].items()
    assert webhook["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "https",
                                                    "scheme": "HTTPS"}
    assert "--tls-cert-file=/etc/gpu-extender-tls/tls.crt" in webhook["args"]
    # --watch-nodes (webhook.watchNodes, on by default): its own account reads nodes; with the
    # agent, also the pod an agent's Eviction names (--agent-user), as the plain manifest's
    assert "--watch-nodes" in webhook["args"]
    pod_spec = _named(documents, "Deployment", "-webhook")["spec"]["template"]["spec"]
    role = _named(documents, "ClusterRole", "-webhook")
    nodes = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    agent = next((d for d in documents if d["kind"] == "DaemonSet"), None)
    [validating], [plain_validating] = (_of_kind(d, "ValidatingWebhookConfiguration")
                                        for d in (documents, plain))
    evictions = [h for h in validating["webhooks"] if h["name"].startswith("evictions.")]
    if agent is None:
        assert role["rules"] == [nodes] and evictions == []
    else:
        assert role["rules"] == _of_kind(plain, "ClusterRole")[0]["rules"] == [nodes, pods]
        agent_account = agent["spec"]["template"]["spec"]["serviceAccountName"]
        account = f"system:serviceaccount:{namespace}:{agent_account}"
        assert f"--agent-user={account}" in webhook["args"]
        [plain_evictions] = [h for h in plain_validating["webhooks"]
                             if h["name"].startswith("evictions.")]
        [hook] = evictions
        for key in ("name", "rules", "sideEffects", "failurePolicy", "matchPolicy"):
            assert hook[key] == plain_evictions[key], key
        assert hook["failurePolicy"] == "Fail" and "namespaceSelector" not in hook
        assert hook["matchConditions"] == [
            {"name": "is-the-agent", "expression": f'request.userInfo.username == "{account}"'}]
    binding = _named(documents, "ClusterRoleBinding", "-webhook")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "namespace": namespace,
                                    "name": pod_spec["serviceAccountName"]}]
    assert pod_spec["automountServiceAccountToken"] is True


def test_the_runtime_class_switch_reaches_the_platform_config(helm: Helm) -> None:
    documents = helm.documents(set_values=("webhook.enabled=true",
                                           "platform.admission.runtimeClass.enabled=true"))
    text = _named(documents, "ConfigMap", "-platform")["data"]["platform.yaml"]
    config = load_config_text(text)
    assert (config.admission.runtime_class.enabled, config.admission.runtime_class.name) == \
        (True, "nvidia")
    # a typo is refused by the chart's schema, before anything is rendered
    with pytest.raises(HelmError) as refused:
        helm.documents(set_values=("webhook.enabled=true",
                                   "platform.admission.runtimeClass.enable=true"))
    assert "enable" in str(refused.value)


def test_the_service_settings_reach_the_platform_config_with_their_types(
        helm: Helm, tmp_path: Path) -> None:
    # seconds are numbers, not only integers (the extender accepts 2.5), and the events' pace
    values = tmp_path / "values.yaml"
    values.write_text("platform:\n  service:\n    reservationTTLSeconds: 2.5\n"
                      "    eventQPS: 0\n    eventBurst: 5\n")
    documents = helm.documents(values_files=(values,))
    text = _named(documents, "ConfigMap", "-platform")["data"]["platform.yaml"]
    service = load_config_text(text).service
    assert (service.reservation_ttl_seconds, service.event_qps, service.event_burst) == \
        (2.5, 0.0, 5)
    with pytest.raises(HelmError) as refused:
        helm.documents(set_values=("platform.service.eventQPS=-1",))
    assert "/platform/service/eventQPS" in str(refused.value)


def test_webhook_without_watch_nodes_has_no_account_and_no_token(helm: Helm) -> None:
    documents = helm.documents(set_values=("webhook.enabled=true", "webhook.watchNodes=false"))
    pod_spec = _named(documents, "Deployment", "-webhook")["spec"]["template"]["spec"]
    assert pod_spec["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in pod_spec
    assert not [d for d in documents if d["kind"] in ("ClusterRole", "ClusterRoleBinding")
                and d["metadata"]["name"].endswith("-webhook")]
    webhook = next(c for c in _containers(documents) if c["name"] == "webhook")
    assert "--watch-nodes" not in webhook["args"]


@pytest.mark.parametrize(("name", "enabled"), [("switches-on-second-scheduler", True),
                                               ("switches-on-cert-manager-extender-service",
                                                False)])
def test_webhook_writes_the_charts_scheduler_name_only_where_pods_need_it(
        renderings: dict[str, list[dict[str, Any]]], name: str, enabled: bool) -> None:
    """second-scheduler: pods move to scheduler.name; extender-service: the default scheduler
    already calls the extender, so the webhook must not move pods to a scheduler that is not
    there."""
    platform = yaml.safe_load(_named(renderings[name], "ConfigMap", "-platform")["data"][
        "platform.yaml"])
    assert platform["admission"]["schedulerName"] == {"enabled": enabled,
                                                      "name": "gpu-scheduler"}


def test_shadow_is_read_only_as_the_plain_rbac(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    documents = renderings["switches-on-second-scheduler"]
    plain = _plain("shadow-rbac.yaml")
    assert _named(documents, "ClusterRole", "-shadow")["rules"] == \
        _named(plain, "ClusterRole", "-shadow")["rules"]
    deployment = _named(documents, "Deployment", "-shadow")
    spec = deployment["spec"]["template"]["spec"]
    [binding] = [b for b in _of_kind(documents, "ClusterRoleBinding")
                 if b["roleRef"]["name"] == "gpu-extender-shadow"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": spec["serviceAccountName"],
                                    "namespace": "kube-system"}]
    others = [b for b in _of_kind(documents, "ClusterRoleBinding") + _of_kind(
        documents, "RoleBinding") if b is not binding]
    assert all(s["name"] != spec["serviceAccountName"] for b in others for s in b["subjects"])
    [container] = spec["containers"]
    assert container["args"][0] == "shadow" and "--host=0.0.0.0" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    port = container["ports"][0]
    assert f"--port={port['containerPort']}" in container["args"]
    assert _named(documents, "Service", "-shadow")["spec"]["ports"][0]["targetPort"] == \
        port["name"]


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
    assert [b["roleRef"]["name"] for b in bindings] == ["gpu-extender", "gpu-extender-leader"]
    # the only namespaced rights: the node-capacity publisher's Lease, by name where it can be
    [role] = _of_kind(documents, "Role")
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "resourceNames": ["gpu-extender-node-capacity"], "verbs": ["get", "update"]}]
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
    (["webhook.enabled=true", "tls.source=existing"], "webhook.tls.existingSecret is required"),
    (["agent.enabled=true", "agent.config.overusePolicy=kill"],
     "at '/agent/config/overusePolicy': value must be one of 'warn', 'evict'"),
    (["shadow.enabled=true", "shadow.port=70000"], "at '/shadow/port': maximum"),
    # inside platform: (the generated schema, extender/views/platform_schema.py)
    (["platform.nodeLabels.preset={gfd}"],
     "at '/platform/nodeLabels': additional properties 'preset' not allowed"),
    (["platform.scoring.strategy=cost-fragmentaton"], "at '/platform/scoring/strategy'"),
    # the exact cut's weight is the scheduler config's: one value (docs/score-cut.md)
    (["platform.scoreCut.extenderWeight=10"],
     "platform.scoreCut.extenderWeight: 10 differs from extender.weight 100"),
], ids=["unknown mode", "misspelt key", "port out of range", "digest not sha256",
        "replicas without leader election", "existing without secret", "unknown tls source",
        "webhook existing without secret", "unknown overuse policy", "shadow port",
        "misspelt platform key", "unknown strategy", "cut weight not the scheduler's"])
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


def _rendered_platform(documents: list[dict[str, Any]]) -> Platform:
    config_map = next(doc for doc in _of_kind(documents, "ConfigMap")
                      if doc["metadata"]["name"].endswith("-platform"))
    return build_platform(load_config_text(config_map["data"]["platform.yaml"]))


def test_the_charts_default_platform_is_the_binarys_default(
        renderings: dict[str, list[dict[str, Any]]]) -> None:
    # One source of defaults: what `helm install` runs is what `gpu-extender serve` runs
    # without --config (the Flyte preset included).
    chart = _rendered_platform(renderings["default-second-scheduler"])
    assert chart.config == load_config_text("")


# Flyte's default labels (flytepropeller gpu-device-node-label, gpu-partition-size-node-label)
FLYTE_DEVICE = "k8s.amazonaws.com/accelerator"
FLYTE_PARTITION = "k8s.amazonaws.com/gpu-partition-size"


@pytest.mark.parametrize("name", [name for name, _, _ in RENDERINGS])
def test_every_rendering_decodes_flyte_labelled_nodes(
        renderings: dict[str, list[dict[str, Any]]], name: str) -> None:
    platform = _rendered_platform(renderings[name])
    whole = make_node("flyte-a100").label(FLYTE_DEVICE, "nvidia-tesla-a100").allocatable(gpu=8)
    info = platform.nodes.decode(whole.obj())
    assert info.problems == ()
    assert [platform.catalog.id_of(g.type_index) for g in info.gpus] == ["a100-40gb"] * 8
    # a Flyte MIG pool: 2 A100s cut into 1g.5gb, each instance one nvidia.com/gpu
    mig = (make_node("flyte-a100-mig").label(FLYTE_DEVICE, "nvidia-tesla-a100")
           .label(FLYTE_PARTITION, "1g.5gb").allocatable(gpu=14))
    info = platform.nodes.decode(mig.obj())
    assert info.problems == ()
    assert [len(g.mig.instances) for g in info.gpus if g.mig] == [7, 7]


@pytest.mark.parametrize(("cluster", "image"), [
    P("v1.32.9-eks-f69f56f", "registry.k8s.io/kube-scheduler:v1.32.9"),
    P("v1.33.5-gke.1308000", "registry.k8s.io/kube-scheduler:v1.33.5"),
])
def test_the_second_schedulers_image_follows_the_cluster_version(
        helm: Helm, cluster: str, image: str) -> None:
    # The skew policy: kube-scheduler never newer than the API server it talks to.
    rendered = helm.run("template", "gpu-extender", str(CHART), "--kube-version", cluster,
                        "--show-only", "templates/deployment-scheduler.yaml")
    (deployment,) = [doc for doc in yaml.safe_load_all(rendered) if doc]
    images = [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]]
    assert image in images
    pinned = helm.run("template", "gpu-extender", str(CHART), "--kube-version", cluster,
                      "--set", "scheduler.image.tag=v1.36.3",
                      "--show-only", "templates/deployment-scheduler.yaml")
    assert "registry.k8s.io/kube-scheduler:v1.36.3" in pinned


def test_managed_resources_follow_what_the_platform_adds(helm: Helm) -> None:
    # a MIG profile of a type added in `platform` and a VRAM resource of another tool reach
    # the scheduler's managedResources without a second edit (they bypass the extender else)
    rendered = helm.run(
        "template", "gpu-extender", str(CHART), "--show-only", "templates/configmap-scheduler.yaml",
        "--set", "platform.accelerators[0].id=rtx-6000-ada",
        "--set", "platform.accelerators[0].mig.profiles[0].name=1g.12gb",
        "--set", "platform.foreignForms.vramResources[0].name=example.com/vram",
        "--set", "platform.foreignForms.vramResources[0].unit=GiB")
    (config_map,) = [doc for doc in yaml.safe_load_all(rendered) if doc]
    (extender,) = yaml.safe_load(config_map["data"]["config.yaml"])["extenders"]
    names = [m["name"] for m in extender["managedResources"]]
    assert names[-2:] == ["nvidia.com/mig-1g.12gb", "example.com/vram"]
    assert len(names) == len(set(names))


def test_the_cut_weight_follows_the_scheduler_configs_weight(helm: Helm) -> None:
    """``extender.weight`` is rendered into the KubeSchedulerConfiguration and into the
    platform's ``scoreCut.extenderWeight``: they cannot disagree (docs/score-cut.md)."""
    documents = [d for d in yaml.safe_load_all(helm.template(set_values=["extender.weight=50"]))
                 if d]
    texts = {d["metadata"]["name"]: d["data"] for d in documents
             if d.get("kind") == "ConfigMap" and "data" in d}
    platform = next(yaml.safe_load(t["platform.yaml"]) for t in texts.values()
                    if "platform.yaml" in t)
    scheduler = next(yaml.safe_load(t["config.yaml"]) for t in texts.values()
                     if "config.yaml" in t)
    assert platform["scoreCut"]["extenderWeight"] == 50
    assert scheduler["extenders"][0]["weight"] == 50
