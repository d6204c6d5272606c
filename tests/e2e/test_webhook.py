"""The real kube-apiserver calls the real gpu-extender webhook over TLS (certificate from
``gpu-extender webhook-certs``, configurations from manifests/webhook.yaml), and the real
kube-scheduler with the extender places what the webhook let through."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiException, NodeV1Api

from localcluster import LocalCluster
from localcluster.network import free_port
from tests.e2e.gpu_helpers import GPU_PROFILE_CONFIG, extender_spec, wait_bound, wait_rejected
from tests.e2e.webhook_helpers import (
    WEBHOOK_DATA,
    WEBHOOK_MANIFEST,
    Webhook,
    create_pod,
    make_certs,
    register,
    wait_enforced,
)

pytestmark = pytest.mark.e2e
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
GKE_PARTITION = "cloud.google.com/gke-gpu-partition-size"
FLYTE_DEVICE = "k8s.amazonaws.com/accelerator"
FLYTE_PARTITION = "k8s.amazonaws.com/gpu-partition-size"
REQUIRED = "required_during_scheduling_ignored_during_execution"


def pod(name: str, limits: dict[str, str], *, labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    """A pod as an ML engineer writes it: no schedulerName, no affinity, no tolerations."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": "registry.example/train:1",
                                     "resources": {"limits": limits}}], **spec}}


UNKNOWN_TYPE = pod("unknown-type", {"nvidia.com/gpu": "1"},
                   labels={"gpu-extender.io/accelerator": "a1000"})


@pytest.fixture(scope="module")
def cluster(controlplane_binaries: object, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[LocalCluster, Webhook]]:
    certs = make_certs(tmp_path_factory.mktemp("webhook-certs"))
    with LocalCluster(GPU_PROFILE_CONFIG, extender_spec(WEBHOOK_DATA / "extender.yaml")
                      ) as local:
        gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
        local.create_node("gke-a100", {"nvidia.com/gpu": 2},
                          labels={GKE_ACCELERATOR: "nvidia-a100-80gb"}, taints=[gpu_taint])
        # a GKE pool running the GPU Operator with NRI (Ubuntu nodes): it labels its handoff,
        # or the gke preset's `none` would refuse the VRAM share below (docs/handoff.md)
        local.create_node("gke-t4", {"nvidia.com/gpu": 2},
                          labels={GKE_ACCELERATOR: "nvidia-tesla-t4",
                                  "gpu-extender.io/handoff": "cdi"})
        local.create_node("flyte-a100", {"nvidia.com/gpu": 2},
                          labels={FLYTE_DEVICE: "nvidia-tesla-a100"},
                          taints=[{"key": FLYTE_DEVICE, "value": "nvidia-tesla-a100",
                                   "effect": "NoSchedule"}])
        local.create_node("flyte-t4", {"nvidia.com/gpu": 2},
                          labels={FLYTE_DEVICE: "nvidia-tesla-t4"})
        webhook = Webhook(local, certs, free_port())
        webhook.start(WEBHOOK_DATA / "gke.yaml")
        register(local, webhook)
        wait_enforced(local, UNKNOWN_TYPE, pod("probe", {"nvidia.com/gpu": "1"}))
        yield local, webhook


def test_an_unknown_type_is_refused_at_creation_with_the_decoders_message(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, _ = cluster
    with pytest.raises(ApiException) as refused:
        create_pod(local, UNKNOWN_TYPE)
    assert refused.value.status == 403
    body = str(refused.value.body)
    assert 'admission webhook \\"validate.gpu-extender.io\\" denied the request' in body or \
        'admission webhook "validate.gpu-extender.io" denied the request' in body
    assert 'metadata.labels[gpu-extender.io/accelerator]=\\"a1000\\": unknown GPU type' in body
    assert "accepted: a10, a100, a100-40gb, a100-80gb" in body
    # never created
    names = [p.metadata.name for p in local.api().list_namespaced_pod("default").items]
    assert "unknown-type" not in names


def test_a_typed_pod_gets_the_gke_mapping_and_is_bound_to_its_tainted_pool(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, webhook = cluster
    webhook.start(WEBHOOK_DATA / "gke.yaml")
    create_pod(local, pod("typed-a100", {"nvidia.com/gpu": "1"},
                          labels={"gpu-extender.io/accelerator": "a100-80gb"}))
    stored = local.api().read_namespaced_pod("typed-a100", "default")
    assert stored.spec.scheduler_name == "gpu-scheduler"
    terms = getattr(stored.spec.affinity.node_affinity, REQUIRED).node_selector_terms
    assert [[(e.key, e.operator, e.values) for e in t.match_expressions] for t in terms] == [[
        (GKE_ACCELERATOR, "In", ["nvidia-a100-80gb"]),
        (GKE_PARTITION, "DoesNotExist", None),
    ]]
    tolerations = [(t.key, t.operator, t.effect) for t in stored.spec.tolerations]
    assert ("nvidia.com/gpu", "Exists", "NoSchedule") in tolerations
    # only the toleration the webhook wrote lets it onto the tainted A100 pool
    assert wait_bound(local, "typed-a100") == "gke-a100"


def test_a_vram_share_gets_the_visible_devices_env_and_the_affinity_kube_scheduler_enforces(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, webhook = cluster
    webhook.start(WEBHOOK_DATA / "gke.yaml")
    create_pod(local, pod("share-t4", {"gpu-extender.io/gpu-memory": "4Gi"},
                          labels={"gpu-extender.io/accelerator": "t4"}))
    # flyte-t4 is a T4 too: only the GKE affinity the webhook wrote rules it out
    assert wait_bound(local, "share-t4") == "gke-t4"
    stored = local.api().read_namespaced_pod("share-t4", "default")
    env = stored.spec.containers[0].env
    assert [(e.name, e.value_from.field_ref.field_path) for e in env] == [
        ("NVIDIA_VISIBLE_DEVICES", "metadata.annotations['gpu-extender.io/visible-devices']")]
    # the extender wrote the annotation the env reads before it bound the pod
    assert "gpu-extender.io/visible-devices" in (stored.metadata.annotations or {})


def flytepropeller_pod(name: str, device: str) -> dict[str, Any]:
    """What flytepropeller writes for ``accelerator=A100`` with its default labels
    (``ApplyGPUNodeSelectors``): device affinity and toleration, default scheduler."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"task-name": "train"}},
            "spec": {
                "containers": [{"name": "primary", "image": "registry.example/flyte-task:1",
                                "resources": {"limits": {"nvidia.com/gpu": "1"},
                                              "requests": {"nvidia.com/gpu": "1"}}}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                             {"nodeSelectorTerms": [{"matchExpressions": [
                                 {"key": FLYTE_DEVICE, "operator": "In",
                                  "values": [device]}]}]}}},
                "tolerations": [{"key": FLYTE_DEVICE, "operator": "Equal", "value": device,
                                 "effect": "NoSchedule"}],
            }}


def test_a_pod_as_flytepropeller_writes_it_for_a100_is_placed_on_the_a100_pool(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, webhook = cluster
    webhook.start(WEBHOOK_DATA / "flyte.yaml")
    create_pod(local, flytepropeller_pod("flyte-a100", "nvidia-tesla-a100"))
    stored = local.api().read_namespaced_pod("flyte-a100", "default")
    assert stored.spec.scheduler_name == "gpu-scheduler"
    terms = getattr(stored.spec.affinity.node_affinity, REQUIRED).node_selector_terms
    # Flyte's own expression is kept as written (it already says what we would), the
    # unpartitioned requirement is added, the toleration is not duplicated
    assert [[(e.key, e.operator, e.values) for e in t.match_expressions] for t in terms] == [[
        (FLYTE_DEVICE, "In", ["nvidia-tesla-a100"]),
        (FLYTE_PARTITION, "DoesNotExist", None),
    ]]
    assert [t.key for t in stored.spec.tolerations].count(FLYTE_DEVICE) == 1
    assert wait_bound(local, "flyte-a100") == "flyte-a100"


def test_an_rtx_pro_6000_pod_on_flyte_labels_gets_only_values_a_label_can_hold(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    """The catalog also knows Flyte's SDK string ``RTX PRO 6000``; the API server refuses
    it in an affinity, so the mapping writes only the spellings a node label can carry."""
    local, webhook = cluster
    webhook.start(WEBHOOK_DATA / "flyte.yaml")
    try:
        created = create_pod(local, pod("rtx", {"nvidia.com/gpu": "1"}, labels={
            "gpu-extender.io/accelerator": "rtx-pro-6000"}), dry_run=True)
    finally:
        webhook.start(WEBHOOK_DATA / "gke.yaml")
    terms = getattr(created.spec.affinity.node_affinity, REQUIRED).node_selector_terms
    assert [[(e.key, e.operator, e.values) for e in t.match_expressions] for t in terms] == [[
        (FLYTE_DEVICE, "In", ["rtx-pro-6000", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
                              "nvidia-rtx-pro-6000"]),
        (FLYTE_PARTITION, "DoesNotExist", None),
    ]]


def test_watching_nodes_a_share_only_a_gke_pool_could_hold_is_refused_at_creation(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    """gke-a100 is the only A100 80GB node and the gke preset's handoff is none; gke-t4 is
    labelled gpu-extender.io/handoff=cdi, so a T4 share is admitted."""
    local, webhook = cluster
    webhook.start(WEBHOOK_DATA / "gke.yaml", "--watch-nodes",
                  "--kubeconfig", str(local.kubeconfig()))
    share_a100 = pod("share-a100", {"gpu-extender.io/gpu-memory": "4Gi"},
                     labels={"gpu-extender.io/accelerator": "a100-80gb"})

    def refusal() -> str | None:
        try:
            create_pod(local, share_a100, dry_run=True)
        except ApiException as exc:
            return str(exc.body) if exc.status == 403 else None
        return None

    try:  # the worker lists the nodes once it has started: wait for the verdict
        local.wait_for(lambda: refusal() is not None, timeout_s=30,
                       description="the webhook to have listed the nodes")
        message = refusal()
        assert message is not None
        assert "spec.containers[main].resources: 4096 MiB VRAM share on a100-80gb" in message
        assert "1 node(s) with handoff: none: gke-a100" in message
        assert "accepted: nvidia.com/gpu: 1 on a time-sharing pool" in message
        created = create_pod(local, pod("share-t4-nri", {"gpu-extender.io/gpu-memory": "4Gi"},
                                        labels={"gpu-extender.io/accelerator": "t4"}),
                             dry_run=True)
        assert created.spec.scheduler_name == "gpu-scheduler"
    finally:
        webhook.start(WEBHOOK_DATA / "gke.yaml")


def test_the_runtime_class_switch_sets_nvidia_and_keeps_a_pods_own_class(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    """The RuntimeClass admission plugin refuses a class that does not exist: both exist here,
    as the GPU Operator creates ``nvidia``."""
    local, webhook = cluster
    node = NodeV1Api(local.api_client())
    for name in ("nvidia", "kata"):
        node.create_runtime_class({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                   "metadata": {"name": name}, "handler": name})
    webhook.start(WEBHOOK_DATA / "runtime-class.yaml")
    try:
        create_pod(local, pod("runtime-t4", {"nvidia.com/gpu": "1"},
                              labels={"gpu-extender.io/accelerator": "t4"}))
        stored = local.api().read_namespaced_pod("runtime-t4", "default")
        assert stored.spec.runtime_class_name == "nvidia"
        assert wait_bound(local, "runtime-t4") == "gke-t4"
        own = create_pod(local, pod("own-class", {"nvidia.com/gpu": "1"},
                                    runtimeClassName="kata"), dry_run=True)
        assert own.spec.runtime_class_name == "kata"
        cpu = create_pod(local, pod("cpu-only", {"cpu": "1"}), dry_run=True)
        assert cpu.spec.runtime_class_name is None
    finally:
        webhook.start(WEBHOOK_DATA / "gke.yaml")


def test_with_the_webhook_down_pods_are_still_created_and_placed(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, webhook = cluster
    webhook.stop()
    try:
        # failurePolicy Ignore: creation goes through; the extender checks at filter time
        create_pod(local, pod("down-t4", {"nvidia.com/gpu": "1"},
                              labels={"gpu-extender.io/accelerator": "t4"},
                              schedulerName="gpu-scheduler"))
        assert wait_bound(local, "down-t4") in ("gke-t4", "flyte-t4")
        create_pod(local, {**UNKNOWN_TYPE, "spec": {**UNKNOWN_TYPE["spec"],
                                                    "schedulerName": "gpu-scheduler"}})
        message = wait_rejected(local, "unknown-type")
        assert "unknown GPU type" in message and "a1000" in message
    finally:
        webhook.start(WEBHOOK_DATA / "gke.yaml")


def test_the_shipped_webhook_manifest_passes_server_side_dry_run(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    """As shipped (empty caBundle, for cert-manager to fill) and as webhook-certs fills it in;
    the configurations are renamed only because the test's own ones hold the names."""
    import yaml
    from kubernetes import utils

    local, webhook = cluster
    for path in (WEBHOOK_MANIFEST, webhook.certs / "webhook.yaml"):
        kinds = []
        for document in yaml.safe_load_all(path.read_text()):
            if document["kind"].endswith("WebhookConfiguration"):
                document["metadata"]["name"] += "-dry-run"
            created = utils.create_from_dict(local.api_client(), document, dry_run="All")
            kinds += [o.kind for o in created]
        assert sorted(kinds) == ["ClusterRole", "ClusterRoleBinding", "Deployment",
                                 "MutatingWebhookConfiguration", "Service", "ServiceAccount",
                                 "ValidatingWebhookConfiguration"], path


def test_warnings_reach_the_client_as_kubectl_prints_them(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, webhook = cluster
    webhook.start(WEBHOOK_DATA / "gke.yaml")
    odd = pod("odd", {"cpu": "1"}, labels={"gpu-extender.io/accelerator": "a100"})
    _, status, headers = local.api().create_namespaced_pod_with_http_info(
        "default", odd, dry_run="All")
    assert status == 201
    assert headers["Warning"] == (
        '299 - "gpu-extender: the pod names a GPU type but requests no GPU (nvidia.com/gpu, '
        'nvidia.com/mig-<profile>, gpu-extender.io/gpu-memory, ...); it gets none"')
