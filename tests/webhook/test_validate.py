"""/validate: what the extender would reject is refused with the decoder's own message (field,
value, accepted); odd but valid requests get warnings; pods without GPUs always pass."""

from __future__ import annotations

from typing import Any

import pytest

from extender.platform import load_platform
from extender.webhook.admit import PodAdmission
from tests.builders import expr, make_pod
from tests.webhook.helpers import admission, platform_with, review

P = pytest.param
WEBHOOK = admission(typeLabel="gke")


@pytest.mark.parametrize(("pod", "message"), [
    P(make_pod("p").gpus(1).accelerator("a1000"),
      "gpu-extender: metadata.labels[gpu-extender.io/accelerator]=\"a1000\": unknown GPU type; "
      "did you mean 'a100'? (accepted: a10, a100, a100-40gb, a100-80gb, a10g, a30, a800, "
      "a800-80gb, b200, b200-180gb, gb200, h100, h100-80gb, h100-94gb, h200, h200-141gb, h800, "
      "l4, l40s, p100, rtx-pro-6000, t4, v100, v100-16gb, v100-32gb)",
      id="unknown type, with the accepted ids"),
    P(make_pod("p").mig("1g.5gb").accelerator("h100-80gb"),
      "gpu-extender: spec.containers[0].resources.limits[nvidia.com/mig-1g.5gb]=\"1\": no "
      "GPU type the pod accepts (h100-80gb) has MIG profile 1g.5gb (accepted: a GPU type with "
      "MIG profile 1g.5gb: a100-40gb)",
      id="a MIG profile the type cannot have"),
    P(make_pod("p").gpu_memory("100Gi").accelerator("l4"),
      "gpu-extender: spec.containers[0].resources.limits[gpu-extender.io/gpu-memory]="
      "\"100Gi\": larger than any accepted GPU (largest 24576 MiB among l4) (accepted: at "
      "most 24576Mi)", id="VRAM larger than any accepted GPU"),
    P(make_pod("p").container(limits={"nvidia.com/gpu": "1",
                                      "gpu-extender.io/gpu-memory": "4Gi"}),
      "gpu-extender: spec.containers[0].resources=\"gpu-extender.io/gpu-memory, nvidia.com/gpu\":"
      " a container may use exactly one GPU amount form (accepted: nvidia.com/gpu: N, "
      "nvidia.com/gpu.shared: N, nvidia.com/mig-<profile>: N, gpu-extender.io/gpu-memory: "
      "<bytes, e.g. 4Gi>, gpu-extender.io/gpu-milli: 1..999)", id="two amount forms"),
    P(make_pod("p").gpus("1.5"),
      "gpu-extender: spec.containers[0].resources.limits[nvidia.com/gpu]=\"1.5\": must be a "
      "whole number (accepted: a whole number >= 0; ask for a fraction with "
      "gpu-extender.io/gpu-memory or a MIG profile)", id="fractional count"),
    P(make_pod("p").gpus(1).node_affinity_term(
        expr("cloud.google.com/gke-accelerator", "In", "nvidia-tesla-k80")),
      "gpu-extender: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
      ".nodeSelectorTerms[0].matchExpressions[0].values[0]=\"nvidia-tesla-k80\": no known GPU "
      "type has cloud.google.com/gke-accelerator=nvidia-tesla-k80 (accepted: a10, a100, "
      "a100-40gb, a100-80gb, a10g, a30, a800, a800-80gb, b200, b200-180gb, gb200, h100, "
      "h100-80gb, h100-94gb, h200, h200-141gb, h800, l4, l40s, p100, rtx-pro-6000, t4, v100, "
      "v100-16gb, v100-32gb)",
      id="unknown label value"),
])
def test_refused_with_the_decoders_message(pod: Any, message: str) -> None:
    answer = WEBHOOK.validate(review(pod.obj()))
    assert not answer.allowed
    assert answer.outcome == "refused"
    assert answer.message == message


def test_the_message_is_the_one_the_extender_reports_at_filter() -> None:
    pod = make_pod("p").gpus(1).accelerator("a1000").obj()
    problems = load_platform().pods.decode(pod).problems
    assert WEBHOOK.validate(review(pod)).message == f"gpu-extender: {problems[0]}"


@pytest.mark.parametrize(("pod", "warnings"), [
    P(make_pod("p").container(limits={"cpu": "1"}).accelerator("a100").obj(),
      ["gpu-extender: the pod names a GPU type but requests no GPU (nvidia.com/gpu, "
       "nvidia.com/mig-<profile>, gpu-extender.io/gpu-memory, ...); it gets none"],
      id="a type but no GPU"),
    P({**make_pod("p").gpus(1).obj(), "spec": {**make_pod("p").gpus(1).obj()["spec"],
                                                "schedulerName": "volcano"}},
      ["gpu-extender: spec.schedulerName='volcano' is not 'gpu-scheduler': unless that "
       "scheduler calls gpu-extender, the GPU request is not placed per GPU"],
      id="another scheduler"),
    P(make_pod("p").gpus(1).accelerator("a100").exclude("t4").obj(),
      ["gpu-extender: metadata.annotations[gpu-extender.io/exclude-accelerators] excludes t4, "
       "which the pod does not accept anyway"], id="an exclusion that excludes nothing"),
    P(make_pod("p").gpus(1).accelerator("h100").obj(),
      ["gpu-extender: no node affinity written: h100-94gb has no value on label "
       "cloud.google.com/gke-accelerator; autoscalers cannot tell which nodes fit (add "
       "admission.platformMapping.gpuTypes entries)"], id="a type the mapping cannot express"),
    P(make_pod("p").gpus(1).accelerator("a100-80gb").obj(), [], id="plain typed pod"),
])
def test_odd_but_valid_requests_are_allowed_with_warnings(pod: dict[str, Any],
                                                          warnings: list[str]) -> None:
    answer = WEBHOOK.validate(review(pod))
    assert answer.allowed
    assert list(answer.warnings) == warnings


@pytest.mark.parametrize("pod", [
    P(make_pod("p").container(limits={"cpu": "1"}).obj(), id="cpu only"),
    P({"metadata": {}, "spec": {}}, id="empty spec"),
    P(make_pod("p").container(limits={"nvidia.com/gpu": "0"}).obj(), id="zero GPUs"),
])
def test_pods_without_gpus_are_never_refused(pod: dict[str, Any]) -> None:
    answer = WEBHOOK.validate(review(pod))
    assert (answer.allowed, answer.outcome, answer.warnings) == (True, "no-gpu", ())


def test_a_malformed_pod_is_refused_with_a_message_not_a_traceback() -> None:
    pod = {"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {"limits": 3}}]}}
    answer = WEBHOOK.validate(review(pod))
    assert not answer.allowed
    assert answer.message == ("gpu-extender: spec.containers[0].resources.limits=3: must be "
                              "an object of quantities")


def test_warnings_can_be_switched_off() -> None:
    quiet = PodAdmission(platform_with({"warnings": False}))
    pod = make_pod("p").container(limits={"cpu": "1"}).accelerator("a100").obj()
    assert quiet.validate(review(pod)).warnings == ()


def test_an_untyped_share_only_a_protected_type_holds_is_refused_with_the_way_out() -> None:
    # the largest unprotected type is rtx-pro-6000 / l40s class; 120Gi fits only on
    # protected ones (h200 141 GB, b200 180 GB), which untyped pods may not use
    answer = WEBHOOK.validate(review(make_pod("p").gpu_memory("120Gi").obj()))
    assert not answer.allowed and answer.outcome == "refused"
    message = answer.message
    assert "limits[gpu-extender.io/gpu-memory]=\"120Gi\": larger than any GPU an untyped pod " \
        "may use here" in message
    assert "only protected types are large enough (" in message and "h200-141gb" in message
    assert "name the type with the label gpu-extender.io/accelerator" in message
    # named, the same share is fine: a typed pod may use the protected type it names
    typed = WEBHOOK.validate(review(make_pod("p").gpu_memory("120Gi").accelerator("h200")
                                    .obj()))
    assert typed.allowed
    # a share an unprotected type holds passes untyped
    assert WEBHOOK.validate(review(make_pod("p").gpu_memory("20Gi").obj())).allowed
