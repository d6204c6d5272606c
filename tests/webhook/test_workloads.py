"""/validate judges a workload's pod template as its pods will be: a Deployment whose pods
would be refused gets a warning at `kubectl apply` (or a refusal, with
admission.workloads: refuse), naming the field inside the template; and an accelerator type
written as an annotation is pointed out."""

from __future__ import annotations

from typing import Any

import pytest

from extender.webhook.admit import PodAdmission
from extender.webhook.review import AdmissionRequest
from tests.builders import make_pod
from tests.webhook.helpers import platform_with, review

P = pytest.param


def workload(kind: str, pod: dict[str, Any]) -> dict[str, Any]:
    template = {"metadata": pod["metadata"], "spec": pod["spec"]}
    spec: dict[str, Any] = ({"jobTemplate": {"spec": {"template": template}}}
                            if kind == "CronJob" else {"template": template})
    return {"apiVersion": "batch/v1" if kind in ("Job", "CronJob") else "apps/v1", "kind": kind,
            "metadata": {"name": "trainer", "namespace": "ml"}, "spec": spec}


def judge(kind: str, pod: dict[str, Any], mode: str = "warn",
          old: dict[str, Any] | None = None) -> Any:
    webhook = PodAdmission(platform_with({"workloads": mode,
                                          "platformMapping": {"typeLabel": "gke"}}))
    obj = workload(kind, pod)
    return webhook.validate(AdmissionRequest(
        uid="u", kind=kind, namespace="ml", operation="UPDATE" if old else "CREATE", object=obj,
        old_object=None if old is None else workload(kind, old)))


BAD = make_pod("p").gpu_memory("100Gi").accelerator("l4").obj()  # no L4 holds 100 GiB
TEMPLATE = {"Deployment": "spec.template", "StatefulSet": "spec.template",
            "ReplicaSet": "spec.template", "DaemonSet": "spec.template", "Job": "spec.template",
            "CronJob": "spec.jobTemplate.spec.template"}


@pytest.mark.parametrize("kind", list(TEMPLATE))
def test_a_workload_whose_pods_would_be_refused_is_warned_about(kind: str) -> None:
    answer = judge(kind, BAD)
    assert answer.allowed
    (warning,) = answer.warnings
    assert warning.startswith(f"gpu-extender: {kind} trainer: its pods would be refused: "
                              f"{TEMPLATE[kind]}.spec.containers[0].resources.limits"
                              "[gpu-extender.io/gpu-memory]=\"100Gi\": larger than any accepted "
                              "GPU")


def test_refuse_mode_refuses_the_workload_with_the_same_message() -> None:
    answer = judge("Deployment", BAD, mode="refuse")
    assert not answer.allowed
    assert "spec.template.spec.containers[0].resources.limits[gpu-extender.io/gpu-memory]" \
        in answer.message


@pytest.mark.parametrize(("mode", "pod", "allowed", "warned"), [
    P("warn", make_pod("p").gpus(1).accelerator("l4").obj(), True, False,
      id="a valid template passes without a word"),
    P("off", BAD, True, False, id="off: workloads are not judged"),
    P("refuse", make_pod("p").obj(), True, False, id="a CPU-only template always passes"),
])
def test_valid_templates_and_off_pass(mode: str, pod: dict[str, Any], allowed: bool,
                                      warned: bool) -> None:
    answer = judge("Deployment", pod, mode=mode)
    assert answer.allowed is allowed
    assert bool(answer.warnings) is warned


def test_an_update_that_leaves_the_refusal_as_it_was_is_not_refused() -> None:
    # scaling a Deployment whose template was already refused is not this update's doing
    answer = judge("Deployment", BAD, mode="refuse", old=BAD)
    assert answer.allowed


def test_an_accelerator_written_as_an_annotation_is_pointed_out() -> None:
    pod = make_pod("p").gpus(1).annotation("gpu-extender.io/accelerator", "l4").obj()
    answer = PodAdmission(platform_with({})).validate(review(pod))
    assert answer.allowed
    assert any("gpu-extender.io/accelerator is an annotation here, and only a label types a pod"
               in w for w in answer.warnings), answer.warnings
