"""The handoff and its trust on the real control plane (docs/handoff.md): kube-scheduler with the
extender binds a VRAM share with the CDI annotation naming the UUID its assignment names, a
whole-GPU pod with none; a forged unbound pod claiming a node's only GPU does not keep a real
pod off it; and the real gpu-extender webhook, over TLS through the API server, refuses a forged
CREATE and an untrusted UPDATE and lets the agent's correction, a label change and a finalizer
removal through. The extender runs with manifests/rbac.yaml, which grants no pod patch: every
bind here proves the one-write bind needs none."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from extender.kube.annotations import encode_assignment, node_gpus_document
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_NODE_GPUS,
    ANNOTATION_OBSERVED,
    Assignment,
    GpuGrant,
    RequestKind,
)
from localcluster import LocalCluster
from localcluster.network import free_port
from tests.e2e.gpu_helpers import (
    GPU_PROFILE_CONFIG,
    NAMESPACE,
    assignment,
    extender_spec,
    gpu_pod,
    wait_bound,
)
from tests.e2e.webhook_helpers import (
    WEBHOOK_DATA,
    Webhook,
    create_pod,
    make_certs,
    register,
    wait_enforced,
)

pytestmark = pytest.mark.e2e
AGENT = "system:serviceaccount:kube-system:gpu-extender-agent"
EXTENDER = "system:serviceaccount:kube-system:gpu-extender"
CDI = "nvidia.cdi.k8s.io/container."
T4 = {"nvidia.com/gpu.product": "Tesla-T4"}
UUIDS = ("GPU-11111111-2222-3333-4444-555555555555", "GPU-66666666-7777-8888-9999-000000000000")


def gpus_annotation(count: int) -> dict[str, str]:
    return {ANNOTATION_NODE_GPUS: node_gpus_document([
        {"index": i, "uuid": UUIDS[i], "type": "t4", "memoryMiB": 15360}
        for i in range(count)])}


@pytest.fixture(scope="module")
def cluster(controlplane_binaries: object, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[LocalCluster, Webhook]]:
    certs = make_certs(tmp_path_factory.mktemp("webhook-certs"))
    with LocalCluster(GPU_PROFILE_CONFIG, extender_spec()) as local:
        local.create_node("t4-uuid", {"nvidia.com/gpu": 2}, labels={**T4, "pool": "uuid"},
                          annotations=gpus_annotation(2))
        local.create_node("t4-solo", {"nvidia.com/gpu": 1}, labels={**T4, "pool": "solo"},
                          annotations=gpus_annotation(1))
        webhook = Webhook(local, certs, free_port())
        webhook.start(WEBHOOK_DATA / "extender.yaml",
                      "--trusted-user", EXTENDER, "--trusted-user", AGENT)
        register(local, webhook)
        wait_enforced(local, gpu_pod("invalid", {"nvidia.com/gpu": "1"},
                                     labels={"gpu-extender.io/accelerator": "a1000"}),
                      gpu_pod("probe", {"nvidia.com/gpu": "1"}, scheduler=""))
        yield local, webhook


def cdi_annotations(local: LocalCluster, name: str) -> dict[str, str]:
    annotations = local.api().read_namespaced_pod(name, NAMESPACE).metadata.annotations or {}
    return {k: v for k, v in annotations.items() if k.startswith("nvidia.cdi.k8s.io/")}


def test_a_share_is_bound_with_the_cdi_annotation_naming_its_uuid(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, _ = cluster
    share = gpu_pod("share", {"gpu-extender.io/gpu-memory": "4Gi"},
                    node_selector={"pool": "uuid"})
    share["spec"]["containers"].append({"name": "logger", "image": "registry.example/log:1"})
    whole = gpu_pod("whole", {"nvidia.com/gpu": 1}, node_selector={"pool": "uuid"})
    create_pod(local, share)
    create_pod(local, whole)
    assert wait_bound(local, "share") == "t4-uuid"
    assert wait_bound(local, "whole") == "t4-uuid"
    (grant,) = assignment(local.api(), "share").grants
    assert grant.uuid in UUIDS
    # only the container holding the share; the logger gets no GPU
    assert cdi_annotations(local, "share") == {CDI + "main": f"nvidia.com/gpu={grant.uuid}"}
    assert cdi_annotations(local, "whole") == {}, "the device plugin hands whole GPUs over"


def test_a_forged_unbound_pod_does_not_keep_a_real_pod_off_the_only_gpu(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, _ = cluster
    # created by a trusted identity, so the webhook lets it through: the inventory's own
    # side of trust (issue 19) must not believe an assignment on a pod that was never bound
    forged = gpu_pod("forged", {}, scheduler="nobody", annotations={
        ANNOTATION_ASSIGNED: encode_assignment(Assignment(
            "t4-solo", RequestKind.WHOLE, (GpuGrant(0, 15360, whole=True, uuid=UUIDS[0]),),
            "t4"))})
    del forged["spec"]["containers"][0]["resources"]
    impersonated(local, EXTENDER).create_namespaced_pod(NAMESPACE, forged)
    real = gpu_pod("real", {"nvidia.com/gpu": 1}, node_selector={"pool": "solo"})
    create_pod(local, real)
    assert wait_bound(local, "real", timeout_s=90) == "t4-solo"


def impersonated(local: LocalCluster, user: str) -> client.CoreV1Api:
    """The admin's client acting as ``user`` (with system:masters, so RBAC allows it and the
    webhook judges only who the user is)."""
    api_client = client.ApiClient(local.api_client().configuration)
    api_client.set_default_header("Impersonate-User", user)
    api_client.set_default_header("Impersonate-Group", "system:masters")
    return client.CoreV1Api(api_client)


def refusal(action: Any) -> str:
    with pytest.raises(ApiException) as refused:
        action()
    assert refused.value.status == 403, refused.value.body
    body = str(refused.value.body)
    assert "validate.gpu-extender.io" in body
    return body


def test_the_webhook_refuses_a_forged_create(cluster: tuple[LocalCluster, Webhook]) -> None:
    local, _ = cluster
    forged = gpu_pod("forged-cdi", {"gpu-extender.io/gpu-memory": "1Gi"}, annotations={
        CDI + "main": f"nvidia.com/gpu={UUIDS[1]}"})
    body = refusal(lambda: create_pod(local, forged))
    assert "metadata.annotations[nvidia.cdi.k8s.io/container.main] may be written only" in body
    assert AGENT in body
    # NVIDIA_VISIBLE_DEVICES of its own in a share pod
    own_env = gpu_pod("own-env", {"gpu-extender.io/gpu-memory": "1Gi"})
    own_env["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES",
                                                "value": "all"}]
    assert "NVIDIA_VISIBLE_DEVICES in a pod with a GPU share" in refusal(
        lambda: create_pod(local, own_env))


def test_the_webhook_judges_an_update_on_what_it_changes(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, _ = cluster
    admin = local.api()
    create_pod(local, gpu_pod("owned", {"gpu-extender.io/gpu-memory": "2Gi"},
                              node_selector={"pool": "uuid"}))
    wait_bound(local, "owned")
    chosen = assignment(admin, "owned")
    # the owner rewrites its books or its device: refused
    for key, value in ((ANNOTATION_ASSIGNED, "{}"), (CDI + "main", "nvidia.com/gpu=all"),
                       (ANNOTATION_OBSERVED, encode_assignment(chosen))):
        body = refusal(lambda k=key, v=value: admin.patch_namespaced_pod(
            "owned", NAMESPACE, {"metadata": {"annotations": {k: v}}}))
        assert f"metadata.annotations[{key}]" in body
    # the agent's correction passes; so does a label change
    impersonated(local, AGENT).patch_namespaced_pod(
        "owned", NAMESPACE, {"metadata": {"annotations": {
            ANNOTATION_OBSERVED: encode_assignment(chosen)}}})
    admin.patch_namespaced_pod("owned", NAMESPACE, {"metadata": {"labels": {"team": "b"}}})
    stored = admin.read_namespaced_pod("owned", NAMESPACE).metadata
    assert stored.labels["team"] == "b" and ANNOTATION_OBSERVED in stored.annotations


def test_a_finalizer_removal_passes_on_a_pod_whose_request_is_no_longer_valid(
        cluster: tuple[LocalCluster, Webhook]) -> None:
    local, _ = cluster
    admin = local.api()
    # created while admission was off for its namespace, with a request /validate refuses
    admin.create_namespace({"metadata": {"name": "legacy",
                                         "labels": {"gpu-extender.io/admission": "disabled"}}})
    stale = gpu_pod("stale", {"nvidia.com/gpu": "1"}, scheduler="nobody",
                    labels={"gpu-extender.io/accelerator": "a1000"})
    stale["metadata"]["finalizers"] = ["example.com/cleanup"]
    admin.create_namespaced_pod("legacy", stale)
    admin.patch_namespace("legacy", {"metadata": {"labels": {
        "gpu-extender.io/admission": "enabled"}}})

    def admission_on() -> bool:
        try:
            probe = {**stale, "metadata": {**stale["metadata"], "name": "probe"}}
            admin.create_namespaced_pod("legacy", probe, dry_run="All")
        except ApiException as exc:
            return exc.status == 403
        return False

    local.wait_for(admission_on, timeout_s=30, description="admission on in namespace legacy")
    # a label change, then the controller's finalizer removal: neither is refused
    admin.patch_namespaced_pod("stale", "legacy", {"metadata": {"labels": {"team": "c"}}})
    admin.patch_namespaced_pod("stale", "legacy", {"metadata": {"finalizers": None}})
    assert not admin.read_namespaced_pod("stale", "legacy").metadata.finalizers
