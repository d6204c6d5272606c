"""The chart's demand switch (`demand.enabled`, docs/autoscaling.md), rendered by the real helm
and installed into the real kube-apiserver: it lints and passes server-side dry run in both
demand modes (the ProvisioningRequest CRD applied first), and the controller's ServiceAccount
holds least privilege, proved by SubjectAccessReview: it reads pods and nodes, writes Events,
and writes its demand objects only in the release namespace and only those of its mode."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from localcluster import LocalCluster
from localcluster.helm import CHART, DEMAND_MODES, MODES, Helm
from tests.deploy.test_apiserver import dry_run_all
from tests.e2e.demand_harness import apply_provisioning_request_crd

pytestmark = pytest.mark.deploy

RELEASE_NAMESPACE = "gpu-demand"
OTHER_NAMESPACE = "default"
PROVREQ, UTILITY = DEMAND_MODES


def demand_sets(demand_mode: str) -> tuple[str, ...]:
    return ("demand.enabled=true", f"demand.mode={demand_mode}")


def _of_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents if doc["kind"] == kind]


def _demand(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [document] = [doc for doc in _of_kind(documents, kind)
                  if doc["metadata"]["name"].endswith("-demand")]
    return document


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("demand_mode", DEMAND_MODES)
def test_helm_lint_passes_with_demand_on(helm: Helm, mode: str, demand_mode: str) -> None:
    args = ["lint", "--strict", str(CHART), "--set",
            ",".join((*demand_sets(demand_mode), f"mode={mode}"))]
    assert "0 chart(s) failed" in helm.run(*args)


def test_demand_is_off_by_default(helm: Helm) -> None:
    names = [doc["metadata"]["name"] for doc in helm.documents()]
    assert not [name for name in names if "demand" in name]


# The rights per mode. Cluster-wide: read the inventory, write Events. In the release namespace:
# the leader Lease (create; get/update by name), and the mode's objects.
CLUSTER_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]
LEASE_RULES = [
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "resourceNames": ["gpu-extender-demand"], "verbs": ["get", "update"]},
]
MODE_RULES = {
    PROVREQ: [
        {"apiGroups": [""], "resources": ["podtemplates"],
         "verbs": ["list", "create", "patch", "delete"]},
        {"apiGroups": ["autoscaling.x-k8s.io"], "resources": ["provisioningrequests"],
         "verbs": ["list", "create", "patch", "delete"]}],
    UTILITY: [{"apiGroups": [""], "resources": ["pods"],
               "verbs": ["create", "patch", "delete"]}],
}


@pytest.mark.parametrize("demand_mode", DEMAND_MODES)
def test_demand_rights_are_the_modes_and_nothing_more(helm: Helm, demand_mode: str) -> None:
    documents = helm.documents(set_values=demand_sets(demand_mode))
    assert _demand(documents, "ClusterRole")["rules"] == CLUSTER_RULES
    role = _demand(documents, "Role")
    assert role["metadata"]["namespace"] == "kube-system"  # the release namespace
    assert role["rules"] == LEASE_RULES + MODE_RULES[demand_mode]
    deployment = _demand(documents, "Deployment")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert account == _demand(documents, "ServiceAccount")["metadata"]["name"]
    bindings = _of_kind(documents, "ClusterRoleBinding") + _of_kind(documents, "RoleBinding")
    holding = sorted(b["roleRef"]["name"] for b in bindings
                     if any(s["name"] == account for s in b["subjects"]))
    assert holding == ["gpu-extender-demand", "gpu-extender-demand"]  # its ClusterRole + Role


def test_the_shipped_priority_class_never_delays_or_evicts_a_real_pod(helm: Helm) -> None:
    documents = helm.documents(set_values=demand_sets(UTILITY))
    [priority] = _of_kind(documents, "PriorityClass")
    assert priority["metadata"]["name"] == "gpu-extender-demand"
    # below the default 0 of real pods, not below CA's expendable cutoff (-10)
    assert -10 <= priority["value"] < 0
    assert priority["preemptionPolicy"] == "Never" and priority["globalDefault"] is False
    without = helm.documents(set_values=(*demand_sets(UTILITY),
                                         "demand.priorityClass.create=false"))
    assert not _of_kind(without, "PriorityClass")


def test_demand_runs_the_extenders_image_hardened_with_probes(helm: Helm) -> None:
    documents = helm.documents(set_values=(*demand_sets(PROVREQ), "demand.replicas=2",
                                           "image.digest=sha256:" + "0" * 64))
    deployment = _demand(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/gpu-extender/gpu-extender@sha256:" + "0" * 64
    assert container["args"][0] == "demand"
    assert "--leader-namespace=kube-system" in container["args"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    port = container["ports"][0]
    assert f"--monitoring-address=0.0.0.0:{port['containerPort']}" in container["args"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}


def _platform(documents: list[dict[str, Any]]) -> dict[str, Any]:
    [config_map] = [doc for doc in _of_kind(documents, "ConfigMap")
                    if doc["metadata"]["name"].endswith("-platform")]
    platform: dict[str, Any] = yaml.safe_load(config_map["data"]["platform.yaml"])
    return platform


@pytest.mark.parametrize("demand_mode", DEMAND_MODES)
def test_the_platform_config_runs_the_mode_the_rbac_was_granted_for(
        helm: Helm, demand_mode: str) -> None:
    platform = _platform(helm.documents(set_values=demand_sets(demand_mode)))
    assert platform["demand"] == {"mode": demand_mode, "priorityClassName": "gpu-extender-demand"}
    assert "demand" not in _platform(helm.documents())
    tuned = _platform(helm.documents(set_values=(*demand_sets(demand_mode),
                                                 "platform.demand.debounceSeconds=60")))
    assert tuned["demand"] == {"debounceSeconds": 60, "mode": demand_mode,
                               "priorityClassName": "gpu-extender-demand"}


@pytest.mark.parametrize(("mode", "scheduler"), [("second-scheduler", "gpu-scheduler"),
                                               ("extender-service", "default-scheduler")])
def test_demand_serves_the_scheduler_that_calls_the_extender(
        helm: Helm, mode: str, scheduler: str) -> None:
    """Its pods are the ones that scheduler judges, and its utility pods run under it (so the
    extender marks them Unschedulable, which is what autoscalers act on)."""
    documents = helm.documents(set_values=(*demand_sets(UTILITY), f"mode={mode}"))
    [container] = _demand(documents, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert [a for a in container["args"] if a.startswith("--scheduler-name")] == [
        f"--scheduler-name={scheduler}"]


@pytest.mark.parametrize(("sets", "message"), [
    (["demand.mode=utility-pods", "platform.demand.mode=provisioning-request"],
     'platform.demand.mode: "provisioning-request" differs from demand.mode "utility-pods"'),
    (["demand.mode=karpenter"], "at '/demand/mode': value must be one of"),
    (["demand.priorityClass.value=10"], "at '/demand/priorityClass/value': maximum"),
    (["demand.replicas=0"], "at '/demand/replicas': minimum"),
], ids=["modes differ", "unknown mode", "priority above zero", "no replica"])
def test_bad_demand_values_fail_naming_the_value(helm: Helm, sets: list[str],
                                                 message: str) -> None:
    from localcluster.helm import HelmError

    with pytest.raises(HelmError) as refused:
        helm.template(set_values=["demand.enabled=true", *sets])
    assert message in str(refused.value)


# --------------------------------------------------------------------------- the real apiserver

@pytest.fixture(scope="module")
def cluster(controlplane_binaries: object) -> Iterator[LocalCluster]:
    """A control plane serving ProvisioningRequest (our CRD, tests/data/crds), as a cluster
    running Cluster Autoscaler with --enable-provisioning-requests does."""
    with LocalCluster() as local:
        apply_provisioning_request_crd(local)
        yield local


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("demand_mode", DEMAND_MODES)
def test_demand_rendering_passes_server_side_dry_run(
        helm: Helm, cluster: LocalCluster, mode: str, demand_mode: str) -> None:
    documents = helm.documents(set_values=(*demand_sets(demand_mode), f"mode={mode}"),
                               release=f"d-{demand_mode[:4]}-{mode[:4]}",
                               namespace=OTHER_NAMESPACE)
    demand = [doc for doc in documents if "demand" in doc["metadata"]["name"]]
    for document in _of_kind(demand, "PriorityClass"):  # cluster-wide: a name per case
        document["metadata"]["name"] += f"-{demand_mode}-{mode}"
    checked = dry_run_all(cluster, demand, f"demand {demand_mode} {mode}")
    assert sorted(checked) == ["ClusterRole", "ClusterRoleBinding", "Deployment",
                               "PriorityClass", "Role", "RoleBinding", "ServiceAccount"]


Attributes = tuple[str, str, str, str, str, str]


def allowed(cluster: LocalCluster, account: str, attributes: Attributes) -> bool:
    verb, resource, namespace, group, subresource, name = attributes
    user = f"system:serviceaccount:{RELEASE_NAMESPACE}:{account}"
    review = client.AuthorizationV1Api(cluster.api_client()).create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts",
                                          f"system:serviceaccounts:{RELEASE_NAMESPACE}",
                                          "system:authenticated"],
                 "resourceAttributes": {"namespace": namespace, "verb": verb, "group": group,
                                        "resource": resource, "subresource": subresource,
                                        "name": name}}})
    return bool(review.status.allowed)


REL, OTH, PR = RELEASE_NAMESPACE, OTHER_NAMESPACE, "autoscaling.x-k8s.io"
# (verb, resource, namespace, group, subresource, name) -> allowed per mode (provreq, utility)
GRANTS: list[tuple[Attributes, tuple[bool, bool]]] = [
    (("list", "pods", OTH, "", "", ""), (True, True)),
    (("watch", "nodes", "", "", "", ""), (True, True)),
    (("create", "events", OTH, "", "", ""), (True, True)),
    (("patch", "events", OTH, "", "", ""), (True, True)),
    (("create", "events", OTH, "events.k8s.io", "", ""), (False, False)),
    (("update", "leases", REL, "coordination.k8s.io", "", "gpu-extender-demand"), (True, True)),
    (("update", "leases", REL, "coordination.k8s.io", "", "kube-scheduler"), (False, False)),
    (("create", "provisioningrequests", REL, PR, "", ""), (True, False)),
    (("delete", "podtemplates", REL, "", "", ""), (True, False)),
    (("create", "provisioningrequests", OTH, PR, "", ""), (False, False)),
    (("update", "provisioningrequests", REL, PR, "status", ""), (False, False)),
    (("create", "pods", REL, "", "", ""), (False, True)),
    (("delete", "pods", REL, "", "", ""), (False, True)),
    (("create", "pods", OTH, "", "", ""), (False, False)),
    (("delete", "pods", OTH, "", "", ""), (False, False)),
    (("patch", "pods", REL, "", "", ""), (False, True)),
    (("patch", "pods", OTH, "", "", ""), (False, False)),
    (("patch", "provisioningrequests", REL, PR, "", ""), (True, False)),
    (("update", "provisioningrequests", REL, PR, "", ""), (False, False)),
    (("create", "pods", OTH, "", "binding", ""), (False, False)),
    (("create", "pods", OTH, "", "eviction", ""), (False, False)),
    (("patch", "nodes", "", "", "status", ""), (False, False)),
    (("create", "nodes", "", "", "", ""), (False, False)),
    (("get", "secrets", REL, "", "", ""), (False, False)),
]


@pytest.mark.parametrize("demand_mode", DEMAND_MODES)
def test_installed_demand_account_holds_least_privilege(
        helm: Helm, cluster: LocalCluster, demand_mode: str) -> None:
    release = f"lp-{demand_mode[:4]}"
    sets = [arg for assignment in (*demand_sets(demand_mode),
                                   f"demand.priorityClass.name=gpu-extender-demand-{release}")
            for arg in ("--set", assignment)]
    helm.run("install", release, str(CHART), "--namespace", RELEASE_NAMESPACE,
             "--create-namespace", *sets, kubeconfig=cluster.kubeconfig())
    try:
        account = f"{release}-gpu-extender-demand"
        column = DEMAND_MODES.index(demand_mode)
        judged = [(attrs, allowed(cluster, account, attrs)) for attrs, _ in GRANTS]
        assert judged == [(attrs, modes[column]) for attrs, modes in GRANTS]
        priority = client.SchedulingV1Api(cluster.api_client()).read_priority_class(
            f"gpu-extender-demand-{release}")
        assert (priority.value, priority.preemption_policy) == (-5, "Never")
    finally:
        helm.run("uninstall", release, "--namespace", RELEASE_NAMESPACE,
                 kubeconfig=cluster.kubeconfig())


def test_the_crd_keeps_a_requests_spec_immutable_and_its_limits(cluster: LocalCluster) -> None:
    """What the autoscaler relies on, enforced by the real apiserver: the spec cannot change
    after create (a changed demand is a new request), status is its own subresource, and the
    documented limits hold (<= 32 pod sets, count >= 1, a DNS-subdomain class name)."""
    custom = client.CustomObjectsApi(cluster.api_client())
    group = ("autoscaling.x-k8s.io", "v1", OTHER_NAMESPACE, "provisioningrequests")

    def request(name: str, **spec: Any) -> dict[str, Any]:
        body = {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                "podSets": [{"podTemplateRef": {"name": "t4-1gpu"}, "count": 1}], **spec}
        return {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                "metadata": {"name": name}, "spec": body}

    custom.create_namespaced_custom_object(*group, request("immutable"))
    with pytest.raises(ApiException) as refused:
        custom.patch_namespaced_custom_object(
            *group, "immutable",
            {"spec": {"podSets": [{"podTemplateRef": {"name": "t4-1gpu"}, "count": 2}]}})
    assert "podSets is immutable" in str(refused.value.body)
    status = {"status": {"conditions": [{
        "type": "Provisioned", "status": "True", "reason": "CapacityIsProvisioned",
        "message": "", "lastTransitionTime": "2026-12-01T23:00:00Z"}]}}
    custom.patch_namespaced_custom_object_status(*group, "immutable", status)
    read = custom.get_namespaced_custom_object(*group, "immutable")
    assert read["status"]["conditions"][0]["type"] == "Provisioned"
    too_many = [{"podTemplateRef": {"name": f"t{i}"}, "count": 1} for i in range(33)]
    for name, spec, word in (("sets", {"podSets": too_many}, "podSets"),
                             ("count", {"podSets": [{"podTemplateRef": {"name": "t"},
                                                     "count": 0}]}, "count"),
                             ("class", {"provisioningClassName": "Best Effort"},
                              "provisioningClassName")):
        with pytest.raises(ApiException) as invalid:
            custom.create_namespaced_custom_object(*group, request(name, **spec))
        assert invalid.value.status == 422 and word in str(invalid.value.body), name
