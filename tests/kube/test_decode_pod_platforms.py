"""Pods as other platforms and tools write them: GKE partition and sharing selectors, GFD
single-strategy products, flytepropeller's affinities, HAMi's and KAI's request forms, per-node
VRAM resources. Each row cites where the pod shape comes from."""

from __future__ import annotations

from typing import Any

import pytest

from extender.config import load_config_text
from extender.errors import RequestError
from extender.kube.selection import NodeSelection
from extender.model import GpuRequest, RequestKind
from extender.platform import Platform, build_platform

P = pytest.param
AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def pod(limits: dict[str, str], *, selector: dict[str, str] | None = None,
        terms: list[list[dict[str, Any]]] | None = None,
        annotations: dict[str, str] | None = None,
        tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"limits": limits}}]}
    if selector:
        spec["nodeSelector"] = selector
    if terms is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": "p", "namespace": "default",
                         "annotations": annotations or {}}, "spec": spec}


def request(platform: Platform, obj: dict[str, Any]) -> GpuRequest:
    result = platform.pods.request(obj)
    assert result is not None
    return result


def types(platform: Platform, req: GpuRequest) -> set[str] | None:
    return None if req.types is None else {platform.catalog.id_of(t) for t in req.types}


def flyte_affinity(device: str, partition: dict[str, Any] | None) -> list[list[dict[str, Any]]]:
    """flytepropeller ApplyGPUNodeSelectors (flyteplugins/go/tasks/pluginmachinery/flytek8s/
    pod_helper.go): one term with the device expression and, for a partition, its expression;
    for .unpartitioned() the partition label DoesNotExist."""
    term = [{"key": "k8s.amazonaws.com/accelerator", "operator": "In", "values": [device]}]
    if partition is not None:
        term.append(partition)
    return [term]


# (pod, kind, MIG profile, accepted types or None for untyped)
SHAPES = [
    # GKE gpus-multi page: nodeSelector gke-gpu-partition-size: 1g.5gb, nvidia.com/gpu: 1.
    P(pod({"nvidia.com/gpu": "1"},
          selector={"cloud.google.com/gke-gpu-partition-size": "1g.5gb"}),
      RequestKind.MIG, "1g.5gb", {"a100-40gb"}, id="GKE partition pod is one 1g.5gb instance"),
    P(pod({"nvidia.com/gpu": "2"},
          selector={"cloud.google.com/gke-gpu-partition-size": "3g.40gb",
                    "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}),
      RequestKind.MIG, "3g.40gb", {"h100-80gb"}, id="GKE partition pod with the accelerator"),
    # k8s-device-plugin single strategy: a pod selects the -MIG- product.
    P(pod({"nvidia.com/gpu": "1"},
          selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}),
      RequestKind.MIG, "1g.10gb", {"a100-80gb"}, id="GFD single-strategy product selector"),
    # GKE timesharing-gpus page: the selector names the strategy; the pod stays untyped here
    # (its types come from the inventory's nodes, see test_selection.py).
    P(pod({"nvidia.com/gpu": "1"},
          selector={"cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
                    "cloud.google.com/gke-max-shared-clients-per-gpu": "10"}),
      RequestKind.WHOLE, None, None, id="GKE time-sharing pod"),
    # flytepropeller, @task(accelerator=A100): device affinity In [nvidia-tesla-a100].
    P(pod({"nvidia.com/gpu": "1"}, terms=flyte_affinity("nvidia-tesla-a100", None)),
      RequestKind.WHOLE, None, {"a100-40gb"}, id="Flyte A100 task"),
    # A100.partition_1g_5gb: plus gpu-partition-size In [1g.5gb].
    P(pod({"nvidia.com/gpu": "1"}, terms=flyte_affinity("nvidia-tesla-a100", {
        "key": "k8s.amazonaws.com/gpu-partition-size", "operator": "In",
        "values": ["1g.5gb"]})),
      RequestKind.MIG, "1g.5gb", {"a100-40gb"}, id="Flyte A100.partition_1g_5gb task"),
    # A100.unpartitioned(): gpu-partition-size DoesNotExist -> whole GPUs, kept off partitions
    # by kube-scheduler itself (partitioned nodes carry the label).
    P(pod({"nvidia.com/gpu": "1"}, terms=flyte_affinity("nvidia-tesla-a100", {
        "key": "k8s.amazonaws.com/gpu-partition-size", "operator": "DoesNotExist"})),
      RequestKind.WHOLE, None, {"a100-40gb"}, id="Flyte A100.unpartitioned() task"),
    # Flyte 2 SDK: H100 -> nvidia-tesla-h100 (flyte-sdk _internal/runtime/resources_serde.py).
    P(pod({"nvidia.com/gpu": "1"}, terms=flyte_affinity("nvidia-tesla-h100", None)),
      RequestKind.WHOLE, None, {"h100-80gb"}, id="Flyte 2 H100 task"),
    # HAMi (anchors.md 2.1): nvidia.com/gpu: 1 with nvidia.com/gpumem (MiB) is a VRAM share.
    P(pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"},
          annotations={"nvidia.com/use-gputype": "T4"}),
      RequestKind.VRAM, None, {"t4"}, id="HAMi gpumem + use-gputype"),
    P(pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25"}),
      RequestKind.FRACTION, None, None, id="HAMi gpumem-percentage"),
    # HAMi matches use-gputype by substring; here "A100" is the A100 family, exactly.
    P(pod({"nvidia.com/gpumem": "8000"}, annotations={"nvidia.com/use-gputype": "A100",
                                                      "nvidia.com/nouse-gputype": "a100-40gb"}),
      RequestKind.VRAM, None, {"a100-80gb", "a100-40gb"}, id="HAMi type lists, exactly"),
    # KAI Scheduler (anchors-2026-12.md 3): pod annotations, no GPU resource.
    P(pod({}, annotations={"gpu-fraction": "0.5"}), RequestKind.FRACTION, None, None,
      id="KAI gpu-fraction"),
    P(pod({}, annotations={"gpu-memory": "2000"}), RequestKind.VRAM, None, None,
      id="KAI gpu-memory"),
    # gpushare-scheduler-extender (anchors.md 2.2): aliyun.com/gpu-mem in GiB.
    P(pod({"aliyun.com/gpu-mem": "3"}), RequestKind.VRAM, None, None, id="aliyun gpu-mem"),
]


@pytest.mark.parametrize(("obj", "kind", "profile", "accepted"), SHAPES)
def test_foreign_pod_shapes_decode_exactly(platform: Platform, obj: dict[str, Any],
                                           kind: RequestKind, profile: str | None,
                                           accepted: set[str] | None) -> None:
    req = request(platform, obj)
    assert req.kind is kind
    assert req.mig_profile == profile
    assert types(platform, req) == accepted


def test_amounts_of_the_foreign_forms(platform: Platform) -> None:
    hami = request(platform, pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"}))
    assert hami.vram_mib == 3000
    assert request(platform, pod({"nvidia.com/gpumem-percentage": "25"})).milli == 250
    assert request(platform, pod({"nvidia.com/gpumem-percentage": "100"})).kind \
        is RequestKind.WHOLE
    assert request(platform, pod({}, annotations={"gpu-fraction": "0.5"})).milli == 500
    assert request(platform, pod({}, annotations={"gpu-memory": "2000"})).vram_mib == 2000
    assert request(platform, pod({"aliyun.com/gpu-mem": "3"})).vram_mib == 3 * 1024  # GiB


def test_an_untyped_pod_keeps_its_selection_for_the_inventory(platform: Platform) -> None:
    req = request(platform, pod({"nvidia.com/gpu": "1"},
                                selector={"cloud.google.com/gke-nodepool": "a100-pool"}))
    assert isinstance(req.selection, NodeSelection)
    assert req.selection.selector == (("cloud.google.com/gke-nodepool", "a100-pool"),)
    typed = request(platform, pod({"nvidia.com/gpu": "1"},
                                  selector={"cloud.google.com/gke-accelerator": "nvidia-l4"}))
    assert typed.selection is None  # typed by its own labels: nothing left to resolve


@pytest.mark.parametrize(("obj", "field", "fragment"), [
    P(pod({"nvidia.com/gpu": "2", "nvidia.com/gpumem": "3000"}),
      "spec.containers[0].resources.limits[nvidia.com/gpu]", "share of one GPU",
      id="HAMi gpumem on two GPUs"),
    P(pod({"nvidia.com/gpumem-percentage": "150"}),
      "spec.containers[0].resources.limits[nvidia.com/gpumem-percentage]", "percentage",
      id="HAMi percentage above 100"),
    P(pod({"nvidia.com/gpumem": "10", "nvidia.com/gpumem-percentage": "10"}),
      "spec.containers[0].resources", "exactly one GPU amount form", id="both HAMi forms"),
    P(pod({"nvidia.com/gpumem": "1000"}, annotations={"nvidia.com/use-gputype": "A10X"}),
      "metadata.annotations[nvidia.com/use-gputype]", "unknown GPU type",
      id="HAMi type that is no type"),
    P(pod({}, annotations={"gpu-fraction": "1.5"}), "metadata.annotations[gpu-fraction]",
      "fraction of one GPU", id="KAI fraction above one"),
    P(pod({"nvidia.com/gpu": "1"}, annotations={"gpu-fraction": "0.5"}),
      "metadata.annotations[gpu-fraction]", "exactly one GPU amount form",
      id="KAI fraction beside a GPU resource"),
    P(pod({"nvidia.com/gpu": "1"}, terms=[[{
        "key": "cloud.google.com/gke-gpu-partition-size", "operator": "In",
        "values": ["1g.5gb", "2g.10gb"]}]]),
      f"{AFFINITY}.nodeSelectorTerms", "one partition size per pod",
      id="two partition sizes"),
])
def test_bad_foreign_requests_name_field_value_and_accepted(
        platform: Platform, obj: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(RequestError) as caught:
        platform.pods.request(obj)
    assert str(caught.value).startswith(f"{field}=")
    assert fragment in str(caught.value)
    assert "accepted" in str(caught.value)


def test_each_foreign_form_switches_off() -> None:
    platform = build_platform(load_config_text(
        "foreignForms: {hami: false, kai: false, vramResources: []}\n"))
    # HAMi's resource is then just some other resource; the GPU count stays a whole GPU.
    req = platform.pods.request(pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"}))
    assert req is not None and req.kind is RequestKind.WHOLE
    assert platform.pods.request(pod({}, annotations={"gpu-fraction": "0.5"})) is None
    assert platform.pods.request(pod({"aliyun.com/gpu-mem": "3"})) is None
