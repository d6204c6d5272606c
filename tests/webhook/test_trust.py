"""/validate and the GPU annotations: a forged CREATE or an untrusted UPDATE that changes them
is refused, naming the annotation and who may write it; trusted identities, label changes and
finalizer removals pass (webhook/trust.py)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from extender.platform import load_platform
from extender.webhook.admit import PodAdmission
from extender.webhook.review import AdmissionRequest, decode_review
from tests.builders import make_pod

AGENT = "system:serviceaccount:kube-system:gpu-extender-agent"
EXTENDER = "system:serviceaccount:kube-system:gpu-extender"
WEBHOOK = PodAdmission(load_platform(), trusted_users=(EXTENDER, AGENT))
ASSIGNED = ('{"version":1,"node":"t4-0","kind":"vram","type":"t4","generation":0,'
            '"gpus":[{"index":0,"vramMiB":4096,"uuid":"GPU-aaaa"}]}')
REFERENCE = {"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {
    "fieldPath": "metadata.annotations['gpu-extender.io/visible-devices']"}}}


def review(pod: dict[str, Any], *, old: dict[str, Any] | None = None,
           user: str = "alice") -> AdmissionRequest:
    return AdmissionRequest(uid="u", kind="Pod", namespace="ml",
                            operation="UPDATE" if old is not None else "CREATE",
                            object=pod, old_object=old, username=user)


def share_pod() -> Any:
    return make_pod("p").namespace("ml").gpu_memory("4Gi")


@pytest.mark.parametrize("key", [
    "gpu-extender.io/assigned", "gpu-extender.io/assigned-observed",
    "gpu-extender.io/visible-devices", "nvidia.cdi.k8s.io/container.c0",
    "nvidia.cdi.k8s.io/pod"])
def test_a_create_carrying_a_gpu_annotation_is_refused(key: str) -> None:
    # even on a pod that asks for no GPU (a CPU pod claiming all GPUs of a node)
    for pod in (share_pod(), make_pod("cpu").namespace("ml").container({"cpu": "1"})):
        answer = WEBHOOK.validate(review(pod.annotation(key, ASSIGNED).obj()))
        assert not answer.allowed and answer.outcome == "forged"
        assert f"metadata.annotations[{key}]" in answer.message
        assert "not by alice" in answer.message and AGENT in answer.message


def test_a_trusted_identity_may_create_one() -> None:
    pod = share_pod().annotation("gpu-extender.io/assigned", ASSIGNED).obj()
    assert WEBHOOK.validate(review(pod, user=EXTENDER)).allowed


def bound_share_pod() -> dict[str, Any]:
    pod: dict[str, Any] = share_pod().annotation("gpu-extender.io/assigned", ASSIGNED) \
        .annotation("nvidia.cdi.k8s.io/container.c0", "nvidia.com/gpu=GPU-aaaa") \
        .node_name("t4-0").obj()
    pod["spec"]["containers"][0]["env"] = [REFERENCE]
    return pod


@pytest.mark.parametrize(("change", "user", "refused"), [
    # the owner rewrites its books: refused
    (lambda m: m["annotations"].update({"gpu-extender.io/assigned": "{}"}), "alice",
     "gpu-extender.io/assigned"),
    # ... or points the NRI plugin at another GPU
    (lambda m: m["annotations"].update({"nvidia.cdi.k8s.io/container.c0": "nvidia.com/gpu=all"}),
     "alice", "nvidia.cdi.k8s.io/container.c0"),
    # ... or removes an annotation
    (lambda m: m["annotations"].pop("nvidia.cdi.k8s.io/container.c0"), "alice",
     "nvidia.cdi.k8s.io/container.c0"),
    # ... or adds a correction of its own
    (lambda m: m["annotations"].update({"gpu-extender.io/assigned-observed": ASSIGNED}),
     "alice", "gpu-extender.io/assigned-observed"),
    # the agent's correction passes
    (lambda m: m["annotations"].update({"gpu-extender.io/assigned-observed": ASSIGNED}),
     AGENT, None),
    # a label change and a finalizer removal touch none of them
    (lambda m: m.setdefault("labels", {}).update({"team": "b"}), "alice", None),
    (lambda m: m.pop("finalizers", None), "system:serviceaccount:kube-system:job-controller",
     None),
])
def test_an_update_is_judged_on_what_it_changes(change: Any, user: str,
                                                refused: str | None) -> None:
    old = bound_share_pod()
    old["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    new = copy.deepcopy(old)
    change(new["metadata"])
    answer = WEBHOOK.validate(review(new, old=old, user=user))
    assert answer.allowed is (refused is None), answer.message
    if refused is not None:
        assert f"metadata.annotations[{refused}]" in answer.message


def test_a_finalizer_removal_passes_on_a_pod_whose_request_is_no_longer_valid() -> None:
    # valid when created, invalid under today's config (an unknown type): the update that
    # only removes a finalizer is not refused for what it did not change
    old: dict[str, Any] = make_pod("p").namespace("ml").gpus(1).accelerator("a1000").obj()
    old["metadata"]["finalizers"] = ["example.com/cleanup"]
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    assert WEBHOOK.validate(review(new, old=old)).allowed
    # and a CREATE of the same pod is refused with the decoder's message
    assert not WEBHOOK.validate(review(new)).allowed


@pytest.mark.parametrize(("env", "allowed"), [
    ([REFERENCE], True),                                            # the webhook's own
    ([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}], False),  # every GPU
    ([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "GPU-bbbb"}], False),
    ([{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.annotations['mine']"}}}], False),   # another annotation
    ([{"name": "OTHER", "value": "x"}], True),
])
def test_a_share_pod_may_carry_only_the_downward_reference(env: list[Any],
                                                           allowed: bool) -> None:
    pod: dict[str, Any] = share_pod().obj()
    pod["spec"]["containers"][0]["env"] = env
    answer = WEBHOOK.validate(review(pod))
    assert answer.allowed is allowed
    if not allowed:
        assert answer.message.startswith("gpu-extender: spec.containers[0].env[0]: "
                                         "NVIDIA_VISIBLE_DEVICES in a pod with a GPU share")


def test_the_review_carries_old_object_and_user() -> None:
    body = orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "request": {"uid": "u", "kind": {"kind": "Pod"}, "operation": "UPDATE",
                                     "object": {"a": 1}, "oldObject": {"b": 2},
                                     "userInfo": {"username": "bob", "groups": ["x"]}}})
    decoded = decode_review(body)
    assert decoded.old_object == {"b": 2} and decoded.username == "bob"
