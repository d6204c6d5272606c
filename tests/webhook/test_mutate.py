"""/mutate: table-driven pods -> the exact JSON Patch, and idempotence (applying the patch and
mutating again adds nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.webhook.admit import PodAdmission
from tests.builders import expr, make_pod
from tests.webhook.helpers import FLYTE_DEVICE, admission, apply, platform_with, review

P = pytest.param
GKE = "cloud.google.com/gke-accelerator"
PARTITION = "cloud.google.com/gke-gpu-partition-size"
KARPENTER = "karpenter.k8s.aws/instance-gpu-name"
KARPENTER_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
AFFINITY = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
SCHEDULER = {"op": "replace", "path": "/spec/schedulerName", "value": "gpu-scheduler"}
ENV = {"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {
    "fieldPath": "metadata.annotations['gpu-extender.io/visible-devices']"}}}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
WHOLE = expr(PARTITION, "DoesNotExist")


def new_affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}}}


class WithEnv:
    """A builder whose containers (by index) get an ``env`` list."""

    def __init__(self, builder: Any, env: dict[int, list[dict[str, str]]]) -> None:
        self._builder, self._env = builder, env

    def obj(self) -> dict[str, Any]:
        pod: dict[str, Any] = self._builder.obj()
        for index, env in self._env.items():
            pod["spec"]["containers"][index]["env"] = env
        return pod


class WithSpec:
    """A builder whose pod spec gets ``fields``."""

    def __init__(self, builder: Any, **fields: Any) -> None:
        self._builder, self._fields = builder, fields

    def obj(self) -> dict[str, Any]:
        pod: dict[str, Any] = self._builder.obj()
        pod["spec"].update(self._fields)
        return pod


def defaulted(builder: Any) -> dict[str, Any]:
    """The pod as the API server hands it to a mutating webhook: defaults applied."""
    pod: dict[str, Any] = builder.obj()
    pod["spec"].setdefault("schedulerName", "default-scheduler")
    return pod


GKE_WITH_A100_TOLERATION = admission(
    typeLabel="gke", gpuTypes=[{"name": "a100-80gb", "tolerations": [GPU_TOLERATION]}])
GKE_ONLY = admission(typeLabel="gke")
RUNTIME = PodAdmission(platform_with({"platformMapping": {"enabled": False},
                                      "runtimeClass": {"enabled": True}}))
RUNTIME_NVIDIA = {"op": "add", "path": "/spec/runtimeClassName", "value": "nvidia"}

CASES = [
    P(GKE_WITH_A100_TOLERATION, make_pod("p").gpus(1).accelerator("a100-80gb"),
      [SCHEDULER, new_affinity(expr(GKE, "In", "nvidia-a100-80gb"), WHOLE),
       {"op": "add", "path": "/spec/tolerations", "value": [GPU_TOLERATION]}],
      id="typed whole GPU on GKE: scheduler, type In + unpartitioned, configured toleration"),
    P(GKE_ONLY, make_pod("p").gpus(1).accelerator("a100"),
      [SCHEDULER, new_affinity(expr(GKE, "In", "nvidia-tesla-a100", "nvidia-a100-80gb"),
                               WHOLE)],
      id="a family: the GKE values of every member (A100 40GB is nvidia-tesla-a100)"),
    P(GKE_ONLY, make_pod("p").mig("3g.40gb", 1).accelerator("a100-80gb"),
      [SCHEDULER, new_affinity(expr(GKE, "In", "nvidia-a100-80gb"),
                               expr(PARTITION, "In", "3g.40gb"))],
      id="MIG on GKE: the partition pool of that profile"),
    P(GKE_ONLY, make_pod("p").gpu_memory("4Gi").accelerator("l4"),
      # GKE names L4 nodes nvidia-l4, or nvidia-l4-vws with the virtual workstation driver
      [SCHEDULER, new_affinity(expr(GKE, "In", "nvidia-l4", "nvidia-l4-vws")),
       {"op": "add", "path": "/spec/containers/0/env", "value": [ENV]}],
      id="VRAM share: no partition expression, NVIDIA_VISIBLE_DEVICES from the annotation"),
    P(GKE_ONLY, make_pod("p").gpus(2),
      [SCHEDULER, new_affinity(WHOLE)],
      id="untyped whole GPUs: only the unpartitioned requirement"),
    P(GKE_ONLY, make_pod("p").gpus(1).accelerator("t4")
      .node_affinity_term(expr("topology.kubernetes.io/zone", "In", "z1"))
      .node_affinity_term(expr("topology.kubernetes.io/zone", "In", "z2"),
                          expr(PARTITION, "DoesNotExist")),
      [SCHEDULER,
       {"op": "add", "path": f"{AFFINITY}/nodeSelectorTerms/0/matchExpressions/-",
        "value": expr(GKE, "In", "nvidia-tesla-t4")},
       {"op": "add", "path": f"{AFFINITY}/nodeSelectorTerms/0/matchExpressions/-",
        "value": WHOLE},
       {"op": "add", "path": f"{AFFINITY}/nodeSelectorTerms/1/matchExpressions/-",
        "value": expr(GKE, "In", "nvidia-tesla-t4")}],
      id="existing terms: ANDed into every term, what a term already says is not repeated"),
    P(GKE_ONLY, make_pod("p").gpus(1).node_selector(GKE, "nvidia-tesla-t4"),
      [SCHEDULER, new_affinity(WHOLE)],
      id="typed by nodeSelector on the GKE label: the selector already says the type"),
    P(admission(typeLabel="eks-karpenter"), make_pod("p").gpus(1).accelerator("a100-80gb"),
      [SCHEDULER, new_affinity(expr(KARPENTER, "In", "a100"),
                               expr(KARPENTER_MEMORY, "In", "81920"))],
      id="Karpenter says a100 for both sizes: the memory label tells them apart"),
    P(admission(typeLabel="eks-karpenter"), make_pod("p").gpus(1).accelerator("a100"),
      [SCHEDULER, new_affinity(expr(KARPENTER, "In", "a100"))],
      id="Karpenter, the whole family accepted: the name alone"),
    P(admission(typeLabel="aks"), make_pod("p").gpus(1).accelerators("t4", "l4"),
      [SCHEDULER, new_affinity(expr("karpenter.azure.com/sku-gpu-name", "In", "T4", "L4"))],
      id="AKS: upper-case family names, any of two types"),
    P(admission(typeLabel="aks"), make_pod("p").gpus(1).accelerator("a100-80gb"),
      [SCHEDULER, new_affinity(expr("karpenter.azure.com/sku-gpu-name", "In", "A100"))],
      id="AKS says A100 for both sizes and has no memory label: wider, never narrower"),
    P(admission(typeLabel="gfd"), make_pod("p").shared_gpus(1).accelerator("t4"),
      [SCHEDULER, new_affinity(expr("nvidia.com/gpu.product", "In", "Tesla-T4",
                                    "Tesla-T4-SHARED", "NVIDIA-T4", "NVIDIA-T4-SHARED")),
       {"op": "add", "path": "/spec/containers/0/env", "value": [ENV]}],
      id="GFD: product names, also as GFD writes them on time-sliced nodes (-SHARED)"),
    P(admission(gpuTypes=[
        {"name": "a100-80gb", "nodeSelector": {GKE: "nvidia-a100-80gb"}},
        {"name": "h100-80gb", "nodeSelector": {"node.example/pool": "h100"}}]),
      make_pod("p").gpus(1).accelerators("a100-80gb", "h100-80gb")
      .node_affinity_term(expr("topology.kubernetes.io/zone", "In", "z1")),
      [SCHEDULER,
       {"op": "replace", "path": f"{AFFINITY}/nodeSelectorTerms", "value": [
           {"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "z1"),
                                 expr(GKE, "In", "nvidia-a100-80gb")]},
           {"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "z1"),
                                 expr("node.example/pool", "In", "h100")]}]}],
      id="Flyte gpu_types on two labels: each term split into one per label (OR)"),
    P(GKE_ONLY, make_pod("p").gpus(1).accelerator("h100"),
      [SCHEDULER, new_affinity(WHOLE)],
      id="a type without a GKE value (h100-94gb): no type affinity at all, never a narrower one"),
    P(admission(enabled=False), WithEnv(make_pod("p").gpu_memory("2Gi").sidecar(
        limits={"cpu": "1"}).container(limits={"cpu": "1"}).container(limits={"cpu": "1"}),
        {1: [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
         2: [{"name": "OTHER", "value": "x"}]}),
      [SCHEDULER,
       {"op": "add", "path": "/spec/initContainers/0/env", "value": [ENV]},
       {"op": "add", "path": "/spec/containers/0/env", "value": [ENV]},
       {"op": "add", "path": "/spec/containers/2/env/-", "value": ENV}],
      id="mapping off: env in every container that does not set it, init containers too"),
    P(RUNTIME, make_pod("p").gpus(1), [SCHEDULER, RUNTIME_NVIDIA],
      id="runtimeClass on: a whole-GPU pod gets runtimeClassName nvidia"),
    P(RUNTIME, make_pod("p").gpu_memory("4Gi"),
      [SCHEDULER, RUNTIME_NVIDIA, {"op": "add", "path": "/spec/containers/0/env",
                                   "value": [ENV]}],
      id="runtimeClass on: a share too, with its env"),
    P(RUNTIME, WithSpec(make_pod("p").gpus(1), runtimeClassName="kata-nvidia"), [SCHEDULER],
      id="runtimeClass on: a pod's own class is never overridden"),
    P(GKE_ONLY, make_pod("p").gpus(1).accelerator("t4"),
      [SCHEDULER, new_affinity(expr(GKE, "In", "nvidia-tesla-t4"), WHOLE)],
      id="runtimeClass off (the default): no runtimeClassName"),
]


@pytest.mark.parametrize(("webhook", "builder", "expected"), CASES)
def test_mutate_writes_exactly(webhook: PodAdmission, builder: Any,
                               expected: list[dict[str, Any]]) -> None:
    answer = webhook.mutate(review(defaulted(builder)))
    assert answer.allowed
    assert list(answer.patch) == expected


@pytest.mark.parametrize(("webhook", "builder", "expected"), CASES)
def test_mutating_a_mutated_pod_adds_nothing(webhook: PodAdmission, builder: Any,
                                             expected: list[dict[str, Any]]) -> None:
    once = apply(defaulted(builder), expected)
    again = webhook.mutate(review(once))
    assert again.patch == ()
    assert again.outcome == "unchanged"
    # and the extender accepts the same types for the mutated pod as for the original
    decoder = platform_with({}).pods
    before, after = decoder.request(defaulted(builder)), decoder.request(once)
    assert before is not None and after is not None
    assert (after.kind, after.count, after.types, after.excluded) == \
        (before.kind, before.count, before.types, before.excluded)


def test_flytepropeller_pod_keeps_its_expression_and_toleration() -> None:
    webhook = admission(typeLabel=FLYTE_DEVICE,
                        partitions={"label": "k8s.amazonaws.com/gpu-partition-size"})
    toleration = {"key": FLYTE_DEVICE, "operator": "Equal", "value": "nvidia-tesla-a100",
                  "effect": "NoSchedule"}
    pod = defaulted(make_pod("flyte").gpus(1).node_affinity_term(
        expr(FLYTE_DEVICE, "In", "nvidia-tesla-a100")))
    pod["spec"]["tolerations"] = [toleration]
    assert list(webhook.mutate(review(pod)).patch) == [
        SCHEDULER,
        {"op": "add", "path": f"{AFFINITY}/nodeSelectorTerms/0/matchExpressions/-",
         "value": expr("k8s.amazonaws.com/gpu-partition-size", "DoesNotExist")}]


def test_flyte_partition_request_is_not_contradicted() -> None:
    webhook = admission(typeLabel=FLYTE_DEVICE,
                        partitions={"label": "k8s.amazonaws.com/gpu-partition-size",
                                    "tolerate": True})
    pod = defaulted(make_pod("flyte").mig("1g.10gb", 1).accelerator("a100-80gb")
                    .node_affinity_term(expr("k8s.amazonaws.com/gpu-partition-size", "In",
                                             "1g.10gb")))
    ops = list(webhook.mutate(review(pod)).patch)
    assert {"op": "add", "path": "/spec/tolerations", "value": [
        {"key": "k8s.amazonaws.com/gpu-partition-size", "operator": "Equal",
         "value": "1g.10gb", "effect": "NoSchedule"}]} in ops
    partition_ops = [o for o in ops if "gpu-partition-size" in str(o.get("value")) and
                     "matchExpressions" in o["path"]]
    assert partition_ops == []


@pytest.mark.parametrize(("pod", "outcome"), [
    P(make_pod("cpu").container(limits={"cpu": "1"}).obj(), "no-gpu", id="no GPU"),
    P(make_pod("bad").gpus(1).accelerator("a1000").obj(), "invalid",
      id="invalid: left to /validate"),
])
def test_pods_we_do_not_touch(pod: dict[str, Any], outcome: str) -> None:
    for webhook in (GKE_ONLY, RUNTIME):  # a CPU pod never gets the GPU runtime class
        answer = webhook.mutate(review(pod))
        assert (answer.allowed, answer.patch, answer.outcome) == (True, (), outcome)


def test_scheduler_name_is_left_alone_when_switched_off_or_already_custom() -> None:
    off = PodAdmission(platform_with({"schedulerName": {"enabled": False}}))
    pod = defaulted(make_pod("p").gpus(1))
    assert off.mutate(review(pod)).patch == ()
    custom = make_pod("p").gpus(1).obj()
    custom["spec"]["schedulerName"] = "volcano"
    assert admission().mutate(review(custom)).patch == ()


def test_updates_are_not_mutated() -> None:
    pod = defaulted(make_pod("p").gpus(1))
    assert admission().mutate(review(pod, operation="UPDATE")).patch == ()
