"""Pod JSON -> GpuRequest: amount forms, kube's request arithmetic, type constraints, and every
invalid input as a RequestError naming the field, the value and what is accepted."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.catalog import Catalog
from extender.config import load_config_text
from extender.errors import RequestError, shown
from extender.kube.annotations import encode_assignment, visible_devices
from extender.kube.decode_pod import PodDecoder
from extender.model import (
    RESOURCE_GPU,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MILLI,
    RESOURCE_GPU_SHARED,
    Assignment,
    GpuGrant,
    PodKey,
    RequestKind,
)
from extender.platform import Platform, build_platform
from tests.builders import PodBuilder, expr, make_pod

P = pytest.param
WHOLE, SHARED, MIG, VRAM, FRACTION = (RequestKind.WHOLE, RequestKind.SHARED, RequestKind.MIG,
                                      RequestKind.VRAM, RequestKind.FRACTION)
GFD = "nvidia.com/gpu.product"
GKE = "cloud.google.com/gke-accelerator"
KARPENTER = "karpenter.k8s.aws/instance-gpu-name"
AKS = "karpenter.azure.com/sku-gpu-name"
AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
C0 = "spec.containers[0].resources"


@pytest.fixture(scope="module")
def pods(platform: Platform) -> PodDecoder:
    return platform.pods


def types(catalog: Catalog, *ids: str) -> frozenset[int]:
    return frozenset(catalog.index_of(i) for i in ids)


# -- amounts --------------------------------------------------------------------------------

# (pod, kind, count, vram MiB, milli, MIG profile)
_AMOUNTS = [
    P(make_pod().gpus(2), WHOLE, 2, 0, 0, None, id="nvidia.com/gpu 2 is two whole GPUs"),
    P(make_pod().shared_gpus(2), SHARED, 2, 0, 0, None,
      id="nvidia.com/gpu.shared 2 is two time-slice replicas"),
    P(make_pod().mig("1g.10gb", 2), MIG, 2, 0, 0, "1g.10gb",
      id="nvidia.com/mig-1g.10gb 2 is two MIG instances"),
    P(make_pod().gpu_memory("4Gi"), VRAM, 1, 4096, 0, None,
      id="gpu-memory 4Gi is a 4096 MiB share of one GPU"),
    # 1e9 / 1048576 = 953.67 -> 954
    P(make_pod().gpu_memory("1G"), VRAM, 1, 954, 0, None,
      id="gpu-memory 1G is 953.67 MiB rounded up to 954"),
    P(make_pod().gpu_memory("1Ki"), VRAM, 1, 1, 0, None,
      id="gpu-memory of one KiB rounds up to 1 MiB"),
    # 64Mi written without its unit is 67108864 bytes: not refused, read as 64 MiB
    P(make_pod().gpu_memory("67108864"), VRAM, 1, 64, 0, None,
      id="a unit-less VRAM amount of 64 Mi or more is bytes"),
    P(make_pod().gpu_milli(470), FRACTION, 1, 0, 470, None, id="gpu-milli 470 is 0.47 of a GPU"),
    # containers add up
    P(make_pod().gpus(1).gpus(2), WHOLE, 3, 0, 0, None, id="containers add up: 1 + 2 = 3 GPUs"),
    P(make_pod().gpu_memory("4Gi").gpu_memory("2Gi"), VRAM, 1, 6144, 0, None,
      id="VRAM shares add up on one GPU: 4096 + 2048 = 6144 MiB"),
    P(make_pod().gpu_milli(300).gpu_milli(200), FRACTION, 1, 0, 500, None,
      id="fractions add up on one GPU: 300 + 200 = 500 milli"),
    P(make_pod().mig("1g.10gb").mig("1g.10gb", 2), MIG, 3, 0, 0, "1g.10gb",
      id="MIG instances of one profile add up: 1 + 2 = 3"),
    P(make_pod().gpus(1).container(requests={"cpu": "1"}), WHOLE, 1, 0, 0, None,
      id="a container without GPUs adds nothing"),
    # init containers take the max
    P(make_pod().gpus(2).init_container(limits={RESOURCE_GPU: 4}), WHOLE, 4, 0, 0, None,
      id="an init container larger than the sum wins: max(2, 4) = 4"),
    P(make_pod().gpus(2).gpus(2).init_container(limits={RESOURCE_GPU: 3}), WHOLE, 4, 0, 0, None,
      id="the sum wins over a smaller init container: max(2 + 2, 3) = 4"),
    P(make_pod().gpus(1).init_container(limits={RESOURCE_GPU: 3})
      .init_container(limits={RESOURCE_GPU: 1}), WHOLE, 3, 0, 0, None,
      id="init containers run one at a time: max(1, max(3, 1)) = 3"),
    P(make_pod().container(requests={"cpu": "1"}).init_container(limits={RESOURCE_GPU: 2}),
      WHOLE, 2, 0, 0, None, id="a GPU only in an init container still counts: max(0, 2) = 2"),
    P(make_pod().gpu_memory("4Gi").init_container(limits={RESOURCE_GPU_MEMORY: "8Gi"}),
      VRAM, 1, 8192, 0, None, id="VRAM: max(4096, 8192) = 8192 MiB"),
    # sidecars (restartable init containers) run beside the containers
    P(make_pod().gpus(1).sidecar(limits={RESOURCE_GPU: 1}), WHOLE, 2, 0, 0, None,
      id="a sidecar adds to the containers: 1 + 1 = 2"),
    P(make_pod().gpus(1).sidecar(limits={RESOURCE_GPU: 1})
      .init_container(limits={RESOURCE_GPU: 2}), WHOLE, 3, 0, 0, None,
      id="an init container after a sidecar runs beside it: max(1 + 1, 2 + 1) = 3"),
    P(make_pod().gpus(1).init_container(limits={RESOURCE_GPU: 2})
      .sidecar(limits={RESOURCE_GPU: 1}), WHOLE, 2, 0, 0, None,
      id="an init container before a sidecar runs alone: max(1 + 1, 2) = 2"),
    P(make_pod().gpus(1).init_container(limits={RESOURCE_GPU: 2}, restart_policy="Never"),
      WHOLE, 2, 0, 0, None, id="an init container with another restart policy is no sidecar"),
    # requests default to limits
    P(make_pod().container(requests={RESOURCE_GPU: 2}), WHOLE, 2, 0, 0, None,
      id="requests alone are read"),
    P(make_pod().container(limits={RESOURCE_GPU: 2}), WHOLE, 2, 0, 0, None,
      id="limits alone stand in for requests"),
    P(make_pod().container(requests={RESOURCE_GPU: 2}, limits={RESOURCE_GPU: 2}), WHOLE, 2, 0,
      0, None, id="equal requests and limits are read once"),
    P(make_pod().gpus(" 2 "), WHOLE, 2, 0, 0, None, id="blanks around a count are ignored"),
    P(make_pod().gpus("2e0"), WHOLE, 2, 0, 0, None, id="2e0 is a whole 2"),
]


AMOUNTS = [P(row.values[0], row.values[1:], id=row.id) for row in _AMOUNTS]


@pytest.mark.parametrize(("pod", "expected"), AMOUNTS)
def test_amounts_are_computed_as_kube_scheduler_computes_requests(
        pods: PodDecoder, pod: PodBuilder, expected: tuple[object, ...]) -> None:
    request = pods.request(pod.obj())
    assert request is not None
    assert (request.kind, request.count, request.vram_mib, request.milli,
            request.mig_profile) == expected


@pytest.mark.parametrize(
    "pod",
    [
        P(make_pod(), id="a pod without containers asks for no GPU"),
        P(make_pod().container(requests={"cpu": "1", "memory": "1Gi"}),
          id="a CPU-only pod asks for no GPU"),
        P(make_pod().gpus(0), id="zero GPUs is no GPU request"),
        P(make_pod().gpu_memory("0"), id="zero VRAM is no GPU request"),
        P(make_pod().gpu_milli(0), id="zero milli is no GPU request"),
        P(make_pod().container(limits={"example.com/fpga": 1}), id="other extended resources"),
        P(make_pod().gpus(0).accelerator("no-such-gpu"),
          id="a type label on a pod without a GPU request is not judged"),
    ],
)
def test_pods_without_a_gpu_request(pods: PodDecoder, pod: PodBuilder) -> None:
    assert pods.request(pod.obj()) is None
    info = pods.decode(pod.obj())
    assert info.request is None
    assert info.problems == ()


@pytest.mark.parametrize(
    ("pod", "cpu", "memory"),
    [
        P(make_pod().container(requests={"cpu": "500m", "memory": "1Gi"})
          .container(requests={"cpu": "1", "memory": "512Mi"}), 1500, 1536,
          id="containers add up: 500m + 1 = 1500m, 1024 + 512 = 1536 MiB"),
        P(make_pod().container(requests={"cpu": "1"})
          .init_container(requests={"cpu": "2", "memory": "4Gi"}), 2000, 4096,
          id="init containers take the max: max(1000, 2000) m, max(0, 4096) MiB"),
        P(make_pod().container(requests={"cpu": "1"}).sidecar(requests={"cpu": "1"})
          .init_container(requests={"cpu": "1500m"}), 2500, 0,
          id="an init after a sidecar runs beside it: max(1000 + 1000, 1500 + 1000) = 2500m"),
        P(make_pod().container(limits={"cpu": "4"}), 0, 0,
          id="CPU limits without requests are not requests (the API server defaults them)"),
        P(make_pod().container(requests={"cpu": "lots"}), 0, 0,
          id="an unparseable CPU request counts as zero"),
    ],
)
def test_cpu_and_memory_requests(pods: PodDecoder, pod: PodBuilder, cpu: int,
                                 memory: int) -> None:
    info = pods.decode(pod.obj())
    assert (info.cpu_milli, info.memory_mib) == (cpu, memory)


def test_pod_overhead_is_added_to_cpu_and_memory(pods: PodDecoder) -> None:
    pod = make_pod().container(requests={"cpu": "1", "memory": "1Gi"}).obj()
    pod["spec"]["overhead"] = {"cpu": "250m", "memory": "120Mi"}
    info = pods.decode(pod)
    assert (info.cpu_milli, info.memory_mib) == (1250, 1144)  # 1000 + 250, 1024 + 120


# -- types ------------------------------------------------------------------------------------

# (pod, accepted type ids or None for untyped, excluded type ids)
TYPED = [
    P(make_pod().gpus(1), None, (), id="a pod that names no type is untyped"),
    P(make_pod().gpus(1).accelerator("a100"), ("a100-40gb", "a100-80gb"), (),
      id="the label a100 accepts both A100 sizes"),
    P(make_pod().gpus(1).accelerator("a100-80gb"), ("a100-80gb",), (),
      id="the label a100-80gb accepts only the 80 GB A100"),
    P(make_pod().gpus(1).accelerator("NVIDIA-A100-SXM4-80GB"), ("a100-80gb",), (),
      id="the label may be a GFD alias"),
    P(make_pod().gpus(1).accelerator("nvidia-tesla-t4"), ("t4",), (),
      id="the label may be a GKE or Flyte alias"),
    P(make_pod().gpus(1).accelerator("a10"), ("a10",), (), id="the label a10 is not an A100"),
    P(make_pod().gpus(1).accelerator("l4"), ("l4",), (), id="the label l4 is not the l40s"),
    P(make_pod().gpus(1).accelerators("l4", "a10g"), ("l4", "a10g"), (),
      id="the accelerators annotation accepts any of its types"),
    P(make_pod().gpus(1).annotation("gpu-extender.io/accelerators", " l4 , A10G "),
      ("l4", "a10g"), (), id="the accelerators annotation tolerates blanks and case"),
    P(make_pod().gpus(1).accelerator("a100").accelerators("a100-80gb", "h100"),
      ("a100-80gb",), (), id="label and annotation intersect"),
    P(make_pod().gpus(1).exclude("v100"), None, ("v100-16gb", "v100-32gb"),
      id="an exclusion alone leaves the pod untyped but excludes the family"),
    P(make_pod().gpus(1).accelerator("a100").exclude("a100-40gb"), ("a100-40gb", "a100-80gb"),
      ("a100-40gb",), id="an exclusion is kept apart from the accepted types"),
    # nodeSelector on each preset's type label
    P(make_pod().gpus(1).node_selector(GFD, "NVIDIA-A100-SXM4-80GB"), ("a100-80gb",), (),
      id="a GFD product nodeSelector types the pod"),
    P(make_pod().gpus(1).node_selector(GFD, "NVIDIA-A100-SXM4-80GB-SHARED"), ("a100-80gb",), (),
      id="a GFD product with the -SHARED suffix is the same type"),
    P(make_pod().gpus(1).node_selector(GFD, "A100-SXM4-40GB-MIG-1g.5gb"), ("a100-40gb",), (),
      id="a GFD single-strategy MIG product is its GPU's type"),
    P(make_pod().gpus(1).node_selector(GKE, "nvidia-tesla-a100"), ("a100-40gb",), (),
      id="a GKE accelerator nodeSelector types the pod"),
    P(make_pod().gpus(1).node_selector(KARPENTER, "a100"), ("a100-40gb", "a100-80gb"), (),
      id="a Karpenter gpu-name nodeSelector a100 accepts both A100s"),
    P(make_pod().gpus(1).node_selector(AKS, "T4"), ("t4",), (),
      id="an AKS sku-gpu-name nodeSelector types the pod"),
    P(make_pod().gpus(1).node_selector("kubernetes.io/arch", "amd64"), None, (),
      id="a nodeSelector on another label leaves the pod untyped"),
    P(make_pod().gpus(1).accelerator("a100").node_selector(GKE, "nvidia-a100-80gb"),
      ("a100-80gb",), (), id="a label and a nodeSelector intersect"),
    # required node affinity
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "In", "Tesla-T4", "NVIDIA-L4")),
      ("t4", "l4"), (), id="one affinity term with In accepts its values"),
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "In", "Tesla-T4"))
      .node_affinity_term(expr(GKE, "In", "nvidia-l4")), ("t4", "l4"), (),
      id="affinity terms are OR-ed: the union of their types"),
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "In", "Tesla-T4", "NVIDIA-L4"),
                                            expr(GKE, "In", "nvidia-l4")), ("l4",), (),
      id="expressions in one term are AND-ed: the intersection"),
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "In", "Tesla-T4"))
      .node_affinity_term(expr("topology.kubernetes.io/zone", "In", "a")), None, (),
      id="one term without a type constraint leaves the pod untyped"),
    P(make_pod().gpus(1).node_affinity_term(expr(KARPENTER, "In", "a100"),
                                            expr(GFD, "NotIn", "NVIDIA-A100-SXM4-40GB")),
      ("a100-80gb",), (), id="In a100 and NotIn the 40 GB in one term is the 80 GB"),
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "NotIn", "Tesla-T4")), None, ("t4",),
      id="NotIn alone leaves the pod untyped and excludes the type"),
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "In", "Tesla-T4"))
      .node_affinity_term(expr(GFD, "NotIn", "Tesla-T4")), None, (),
      id="a type one term excludes but another admits is not excluded"),
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "In", "NVIDIA-A100-SXM4-40GB"))
      .node_affinity_term(expr(GKE, "In", "nvidia-h100-80gb"),
                          expr(GFD, "NotIn", "NVIDIA-A100-SXM4-40GB")),
      ("a100-40gb", "h100-80gb"), (), id="a NotIn applies to its own term only"),
    P(make_pod().gpus(1).node_affinity_term(expr(GFD, "Exists")), None, (),
      id="Exists on a type label does not type the pod"),
]


@pytest.mark.parametrize(("pod", "accepted", "excluded"), TYPED)
def test_types_from_label_annotation_selector_and_affinity(
        pods: PodDecoder, catalog: Catalog, pod: PodBuilder, accepted: tuple[str, ...] | None,
        excluded: tuple[str, ...]) -> None:
    request = pods.request(pod.obj())
    assert request is not None
    assert request.types == (None if accepted is None else types(catalog, *accepted))
    assert request.excluded == types(catalog, *excluded)
    assert request.typed is (accepted is not None)


@pytest.mark.parametrize(
    ("pod", "source"),
    [
        P(make_pod().gpus(1).accelerator("t4"), "metadata.labels[gpu-extender.io/accelerator]",
          id="the label is named as the source"),
        P(make_pod().gpus(1).accelerator("t4").node_selector(GFD, "Tesla-T4"),
          f"metadata.labels[gpu-extender.io/accelerator] and spec.nodeSelector[{GFD}]",
          id="every source is named"),
        P(make_pod().gpus(1).node_affinity_term(expr(GFD, "In", "Tesla-T4")),
          f"{AFFINITY}.nodeSelectorTerms", id="affinity is named by its terms"),
        P(make_pod().mig("1g.6gb"), f"{C0}.limits[nvidia.com/mig-1g.6gb]",
          id="an untyped MIG request names its resource"),
    ],
)
def test_type_source_says_where_the_pod_named_its_type(pods: PodDecoder, pod: PodBuilder,
                                                       source: str) -> None:
    request = pods.request(pod.obj())
    assert request is not None
    assert request.type_source == source


@pytest.mark.parametrize(
    ("pod", "accepted"),
    [
        P(make_pod().mig("1g.10gb"), ("a100-40gb", "a100-80gb", "a800-80gb", "h100-80gb", "h800"),
          id="an untyped 1g.10gb is typed with every type that has the profile"),
        P(make_pod().mig("1g.5gb"), ("a100-40gb",),
          id="an untyped 1g.5gb is typed as the A100-40GB"),
        P(make_pod().mig("2g.12gb"), ("a30",), id="an untyped 2g.12gb is typed as the A30"),
        P(make_pod().mig("1g.10gb").accelerator("a100"), ("a100-40gb", "a100-80gb"),
          id="a typed MIG request keeps the types it named"),
    ],
)
def test_mig_request_without_a_type_is_typed_by_its_profile(
        pods: PodDecoder, catalog: Catalog, pod: PodBuilder, accepted: tuple[str, ...]) -> None:
    request = pods.request(pod.obj())
    assert request is not None
    assert request.types == types(catalog, *accepted)


def test_a_custom_label_mapping_types_pods_that_select_it() -> None:
    platform = build_platform(load_config_text("""
nodeLabels:
  custom:
    - key: k8s.amazonaws.com/accelerator
      values: {nvidia-tesla-t4: t4, big: a100}
    - key: example.com/gpu-model
"""))
    catalog = platform.catalog

    def accepted(key: str, value: str) -> frozenset[int] | None:
        request = platform.pods.request(make_pod().gpus(1).node_selector(key, value).obj())
        assert request is not None
        return request.types

    assert accepted("k8s.amazonaws.com/accelerator", "nvidia-tesla-t4") == types(catalog, "t4")
    assert accepted("k8s.amazonaws.com/accelerator", "big") == types(catalog, "a100-40gb",
                                                                     "a100-80gb")
    # a mapping without values looks the label value up in the catalog
    assert accepted("example.com/gpu-model", "NVIDIA-L4") == types(catalog, "l4")
    # the presets still work beside the custom mappings
    assert accepted(GFD, "Tesla-T4") == types(catalog, "t4")
    with pytest.raises(RequestError) as raised:  # a mapped label accepts only its values
        accepted("k8s.amazonaws.com/accelerator", "Tesla-T4")
    assert raised.value.field == "spec.nodeSelector[k8s.amazonaws.com/accelerator]"


# -- invalid input ----------------------------------------------------------------------------

# (pod, field, value, fragments of the message: the problem and what is accepted)
INVALID = [
    # unknown types
    P(make_pod().gpus(1).accelerator("a1000"), "metadata.labels[gpu-extender.io/accelerator]",
      "a1000", ["unknown GPU type", "accepted: a10, a100, a100-40gb, a100-80gb, a10g"],
      id="an unknown type label lists the valid types"),
    P(make_pod().gpus(1).accelerator("a100-80"), "metadata.labels[gpu-extender.io/accelerator]",
      "a100-80", ["unknown GPU type; did you mean 'a100-80gb'?"],
      id="a type name missing its suffix gets the closest name"),
    P(make_pod().gpus(1).accelerators("l4", "gtx-1080"),
      "metadata.annotations[gpu-extender.io/accelerators]", "gtx-1080",
      ["unknown GPU type", "l4, l40s"], id="an unknown type in the annotation list"),
    P(make_pod().gpus(1).annotation("gpu-extender.io/accelerators", " "),
      "metadata.annotations[gpu-extender.io/accelerators]", " ",
      ["must be a comma-separated list of GPU types"], id="an empty accelerators annotation"),
    P(make_pod().gpus(1).exclude("v1000"),
      "metadata.annotations[gpu-extender.io/exclude-accelerators]", "v1000",
      ["unknown GPU type"], id="an unknown excluded type"),
    P(make_pod().gpus(1).node_selector(GFD, "NVIDIA-RTX-9090"), f"spec.nodeSelector[{GFD}]",
      "NVIDIA-RTX-9090", ["no known GPU type has nvidia.com/gpu.product=NVIDIA-RTX-9090",
                          "accepted: a10"], id="an unknown GFD product in a nodeSelector"),
    P(make_pod().gpus(1).node_affinity_term(expr(GKE, "In", "nvidia-l4", "nvidia-tesla-k80")),
      f"{AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values[1]", "nvidia-tesla-k80",
      ["no known GPU type has"], id="an unknown value in node affinity names its position"),
    # contradictions
    P(make_pod().gpus(1).accelerator("t4").accelerators("a100"),
      "metadata.labels[gpu-extender.io/accelerator] and "
      "metadata.annotations[gpu-extender.io/accelerators]",
      "metadata.labels[gpu-extender.io/accelerator] = t4; "
      "metadata.annotations[gpu-extender.io/accelerators] = a100-40gb, a100-80gb",
      ["these type constraints have no type in common"],
      id="a label and an annotation that share no type"),
    P(make_pod().gpus(1).accelerator("t4").node_selector(GFD, "NVIDIA-L4"),
      f"metadata.labels[gpu-extender.io/accelerator] and spec.nodeSelector[{GFD}]",
      f"metadata.labels[gpu-extender.io/accelerator] = t4; spec.nodeSelector[{GFD}] = l4",
      ["no type in common"], id="a label and a nodeSelector that share no type"),
    P(make_pod().gpus(1).accelerator("a100").exclude("a100"),
      "metadata.annotations[gpu-extender.io/exclude-accelerators]", "a100-40gb, a100-80gb",
      ["excludes every type the pod accepts (a100-40gb, a100-80gb)"],
      id="an exclusion of everything the pod accepts"),
    # MIG
    # the value is the count the pod wrote; the problem names the types, "accepted" once
    P(make_pod().mig("1g.5gb").accelerator("a100-80gb"), f"{C0}.limits[nvidia.com/mig-1g.5gb]",
      "1", ["no GPU type the pod accepts (a100-80gb) has MIG profile 1g.5gb (accepted: a GPU type "
            "with MIG profile 1g.5gb: a100-40gb)"],
      id="a MIG profile the named type cannot have"),
    P(make_pod().mig("1g.10gb", "2").accelerator("t4"), f"{C0}.limits[nvidia.com/mig-1g.10gb]",
      "2", ["no GPU type the pod accepts (t4) has MIG profile 1g.10gb"],
      id="a MIG profile on a type without MIG"),
    P(make_pod().mig("1g.5gb").exclude("a100-40gb"), f"{C0}.limits[nvidia.com/mig-1g.5gb]",
      "1", ["no GPU type the pod accepts (none, after its exclusions) has MIG profile 1g.5gb"],
      id="a MIG profile whose only type is excluded"),
    P(make_pod().mig("1g.5gb").mig("1g.5gb").accelerator("a100-80gb"),
      f"{C0}.limits[nvidia.com/mig-1g.5gb]", 2, ["has MIG profile 1g.5gb"],
      id="two containers' MIG counts: the value is their total (1 + 1)"),
    P(make_pod().mig("9g.99gb"), f"{C0}.limits[nvidia.com/mig-9g.99gb]",
      "nvidia.com/mig-9g.99gb", ["unknown MIG profile", "nvidia.com/mig-1g.10gb"],
      id="an unknown MIG profile lists the known ones"),
    P(make_pod().mig("1g.10g"), f"{C0}.limits[nvidia.com/mig-1g.10g]",
      "nvidia.com/mig-1g.10g", ["unknown MIG profile; did you mean 'nvidia.com/mig-1g.10gb'?"],
      id="a misspelt MIG profile gets the closest one"),
    # VRAM
    P(make_pod().gpu_memory("20Gi").accelerator("t4"), f"{C0}.limits[gpu-extender.io/gpu-memory]",
      "20Gi", ["larger than any accepted GPU (largest 16384 MiB among t4)",
                  "accepted: at most 16384Mi"], id="VRAM larger than the named type"),
    # 200 * 1024 = 204800 MiB > the B200's 184320 MiB
    P(make_pod().gpu_memory("200Gi"), f"{C0}.limits[gpu-extender.io/gpu-memory]", "200Gi",
      ["larger than any accepted GPU (largest 190464 MiB"],
      id="VRAM larger than any GPU at all"),
    P(make_pod().gpu_memory("4GiB"), f"{C0}.limits[gpu-extender.io/gpu-memory]", "4GiB",
      ["not a memory quantity", "4096Mi"], id="a VRAM amount that is not a quantity"),
    P(make_pod().gpu_memory("-1Gi"), f"{C0}.limits[gpu-extender.io/gpu-memory]", "-1Gi",
      ["must not be negative"], id="a negative VRAM amount"),
    P(make_pod().gpu_memory("-1"), f"{C0}.limits[gpu-extender.io/gpu-memory]", "-1",
      ["must not be negative"], id="a negative VRAM amount smaller than a MiB"),
    # "4" is 4 bytes: a unit left out, not a 1 MiB share
    P(make_pod().gpu_memory("4"), f"{C0}.limits[gpu-extender.io/gpu-memory]", "4",
      ["a number without a unit is bytes (4 B)", "did you mean 4Gi?"],
      id="a unit-less VRAM amount below 64 Mi is refused with the likely unit"),
    P(make_pod().gpu_memory(4096), f"{C0}.limits[gpu-extender.io/gpu-memory]", "4096",
      ["did you mean 4096Mi?"], id="a unit-less VRAM number that looks like MiB"),
    # forms
    P(make_pod().container(limits={RESOURCE_GPU: 1, RESOURCE_GPU_MEMORY: "4Gi"}), C0,
      "gpu-extender.io/gpu-memory, nvidia.com/gpu",
      ["a container may use exactly one GPU amount form", "nvidia.com/gpu: N"],
      id="two amount forms in one container"),
    P(make_pod().container(requests={RESOURCE_GPU_SHARED: 1}, limits={RESOURCE_GPU_MILLI: 100}),
      C0, "gpu-extender.io/gpu-milli, nvidia.com/gpu.shared", ["exactly one GPU amount form"],
      id="two forms split across requests and limits"),
    P(make_pod().gpus(1).gpu_memory("4Gi"),
      f"{C0}.limits[nvidia.com/gpu] and spec.containers[1].resources.limits"
      "[gpu-extender.io/gpu-memory]", "whole and vram",
      ["a pod may use exactly one GPU amount form across its containers"],
      id="different forms across containers"),
    P(make_pod().mig("1g.10gb").mig("2g.20gb"),
      f"{C0}.limits[nvidia.com/mig-1g.10gb] and "
      "spec.containers[1].resources.limits[nvidia.com/mig-2g.20gb]",
      "MIG 1g.10gb and MIG 2g.20gb", ["exactly one GPU amount form"],
      id="two MIG profiles across containers"),
    P(make_pod().gpus(1).init_container(limits={RESOURCE_GPU_SHARED: 1}),
      f"{C0}.limits[nvidia.com/gpu] and spec.initContainers[0].resources.limits"
      "[nvidia.com/gpu.shared]", "whole and shared", ["exactly one GPU amount form"],
      id="an init container with another form"),
    # counts
    P(make_pod().gpus(-1), f"{C0}.limits[nvidia.com/gpu]", "-1",
      ["must not be negative", "a whole number >= 0"], id="a negative GPU count"),
    P(make_pod().gpus("1.5"), f"{C0}.limits[nvidia.com/gpu]", "1.5",
      ["must be a whole number", "gpu-extender.io/gpu-memory or a MIG profile"],
      id="a fractional GPU count points at the fraction forms"),
    P(make_pod().shared_gpus("500m"), f"{C0}.limits[nvidia.com/gpu.shared]", "500m",
      ["must be a whole number"], id="a milli GPU count"),
    P(make_pod().gpus("two"), f"{C0}.limits[nvidia.com/gpu]", "two",
      ["not a number", "a whole number >= 0"], id="a non-numeric GPU count"),
    P(make_pod().mig("1g.10gb", "1.5"), f"{C0}.limits[nvidia.com/mig-1g.10gb]", "1.5",
      ["must be a whole number"], id="a fractional MIG count"),
    P(make_pod().container(requests={RESOURCE_GPU: "x"}), f"{C0}.requests[nvidia.com/gpu]", "x",
      ["not a number"], id="a bad request is named as a request"),
    P(make_pod().init_container(limits={RESOURCE_GPU: "x"}),
      "spec.initContainers[0].resources.limits[nvidia.com/gpu]", "x", ["not a number"],
      id="a bad init container count names the init container"),
    # fractions
    P(make_pod().gpu_milli(1000), f"{C0}.limits[gpu-extender.io/gpu-milli]", "1000",
      ["a fraction must be below one GPU", "1..999"], id="gpu-milli 1000 is a whole GPU"),
    P(make_pod().gpu_milli(600).gpu_milli(500), f"{C0}.limits[gpu-extender.io/gpu-milli]", 1100,
      ["the containers' fractions add up to a whole GPU or more", "a total below 1000"],
      id="fractions adding up to 600 + 500 = 1100 milli"),
    P(make_pod().gpu_milli("0.5"), f"{C0}.limits[gpu-extender.io/gpu-milli]", "0.5",
      ["must be a whole number"], id="gpu-milli counts thousandths, not a decimal fraction"),
]


@pytest.mark.parametrize(("pod", "field", "value", "fragments"), INVALID)
def test_invalid_requests_name_the_field_the_value_and_what_is_accepted(
        pods: PodDecoder, pod: PodBuilder, field: str, value: object,
        fragments: list[str]) -> None:
    with pytest.raises(RequestError) as raised:
        pods.request(pod.obj())
    error = raised.value
    assert error.field == field
    assert error.value == value
    message = str(error)
    assert message.startswith(f"{field}={shown(value)}: ")
    for fragment in fragments:
        assert fragment in message
    # decode() never raises: the same problem is recorded instead
    info = pods.decode(pod.obj())
    assert info.request is None
    assert info.problems == (message,)


# -- decode -----------------------------------------------------------------------------------

def test_decode_reads_identity_node_and_phase(pods: PodDecoder) -> None:
    pod = make_pod("trainer").namespace("ml").uid("u-1").gpus(1).node_name("n1").phase("Running")
    info = pods.decode(pod.obj())
    assert info.key == PodKey("ml", "trainer", "u-1")
    assert str(info.key) == "ml/trainer"
    assert info.node_name == "n1"
    assert info.terminal is False
    assert info.request is not None and info.request.count == 1


@pytest.mark.parametrize(
    ("phase", "terminal"),
    [P("Pending", False, id="Pending holds"), P("Running", False, id="Running holds"),
     P("Succeeded", True, id="Succeeded is terminal"), P("Failed", True, id="Failed is terminal"),
     P("Unknown", False, id="Unknown still holds")],
)
def test_terminal_phases(pods: PodDecoder, phase: str, terminal: bool) -> None:
    assert pods.decode(make_pod().gpus(1).phase(phase).obj()).terminal is terminal


ASSIGNMENTS = [
    P(Assignment("n1", WHOLE, (GpuGrant(0, 81920, whole=True, uuid="GPU-aaaa"),
                               GpuGrant(3, 81920, whole=True, uuid="GPU-bbbb")),
                 type_id="a100-80gb", generation=42), "GPU-aaaa,GPU-bbbb",
      id="two whole GPUs with UUIDs (NVIDIA_VISIBLE_DEVICES by UUID)"),
    P(Assignment("n2", SHARED, (GpuGrant(1, 4096, replica=True),), type_id="t4"), "1",
      id="one time-slice replica"),
    P(Assignment("n3", MIG, (GpuGrant(2, 9856, mig_profile="1g.10gb", mig_start=5,
                                      mig_slices=1),), type_id="a100-80gb", generation=7), "2",
      id="a MIG instance with its placement"),
    P(Assignment("n4", VRAM, (GpuGrant(0, 4096),), type_id="l4"), "0", id="a VRAM share"),
    P(Assignment("n5", FRACTION, (GpuGrant(6, 7700),)), "6", id="a fraction without a type"),
]


@pytest.mark.parametrize(("assignment", "devices"), ASSIGNMENTS)
def test_assigned_annotation_round_trips(pods: PodDecoder, assignment: Assignment,
                                         devices: str) -> None:
    info = pods.decode(make_pod().gpus(1).assigned(encode_assignment(assignment)).obj())
    assert info.problems == ()
    assert info.assignment == assignment
    assert visible_devices(assignment) == devices


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        P("{not json", "not JSON", id="text that is not JSON"),
        P("[1]", "must be a JSON object", id="a JSON list"),
        P('{"version": 2, "node": "n", "kind": "whole", "gpus": []}',
          "version 2 is not supported (accepted: 1)", id="an unknown version"),
        P('{"version": 1, "node": "n", "kind": "half", "gpus": []}',
          "kind: 'half' is not a request kind (accepted: whole, shared, mig",
          id="an unknown kind"),
        P('{"version": 1, "kind": "whole", "gpus": []}', "node: None must be a non-empty string",
          id="a missing node"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [1]}',
          "gpus[0]: must be an object, not a number", id="a grant that is not an object"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": "ab"}',
          "gpus: must be a list, not a string", id="grants that are a string"),
        P('{"version": 1, "node": "n", "kind": "mig", "gpus": [{"index": 0, "mig": [1]}]}',
          "gpus[0].mig: must be an object, not a list",
          id="a MIG placement that is not an object"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [{"index": -1}]}',
          "gpus[0].index: -1 is not an integer in 0..1023", id="a negative GPU index"),
        # issue 19 finding 2: one value beyond an int32 poisoned the watch-fed inventory
        P('{"version": 1, "node": "n", "kind": "vram", "gpus": [{"index": 0, '
          '"vramMiB": 99999999999}]}',
          "gpus[0].vramMiB: 99999999999 is not an integer in 0..1048576",
          id="VRAM beyond any GPU (1 TiB = 1048576 MiB)"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [{"index": 70000}]}',
          "gpus[0].index: 70000 is not an integer in 0..1023", id="an index beyond int16"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [{"index": true}]}',
          "gpus[0].index: True is not an integer", id="a boolean index"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [{"index": "3"}]}',
          "gpus[0].index: '3' is not an integer", id="an index that is a string"),
        # issue 19 finding 3: a 1e9-slice grant built a 1e9-bit mask under the lock
        P('{"version": 1, "node": "n", "kind": "mig", "gpus": [{"index": 0, "mig": '
          '{"profile": "1g.10gb", "start": 0, "slices": 1000000000}}]}',
          "gpus[0].mig.slices: 1000000000 is not an integer in 1..8", id="MIG slices beyond 8"),
        P('{"version": 1, "node": "n", "kind": "mig", "gpus": [{"index": 0, "mig": '
          '{"profile": "1g.10gb", "start": 6, "slices": 3}}]}',
          "gpus[0].mig.slices: 3 is not an integer in 1..2",
          id="MIG slots past the 8th (start 6 + 3 slices)"),
        P('{"version": 1, "node": "n", "kind": "mig", "gpus": [{"index": 0, "mig": '
          '{"profile": "1g.10gb", "start": 8, "slices": 1}}]}',
          "gpus[0].mig.start: 8 is not an integer in 0..7", id="a MIG start beyond slot 7"),
        # issue 19 finding 7's decoder half: a UUID that is not a string
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [{"index": 0, "uuid": ["x"]}]}',
          "gpus[0].uuid: ['x'] must be a string", id="a UUID that is a list"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [' +
          ",".join(['{"index": 0}'] * 65) + "]}",
          "gpus: 65 grants (accepted: at most 64)", id="more grants than a pod may have"),
        P('{"version": 1, "node": "n", "kind": "whole", "gpus": [{"index": 0, "whole": "yes"}]}',
          "gpus[0].whole: 'yes' must be true or false", id="a flag that is a string"),
    ],
)
def test_a_malformed_assigned_annotation_is_a_problem_not_a_crash(
        pods: PodDecoder, text: str, fragment: str) -> None:
    info = pods.decode(make_pod().gpus(1).assigned(text).obj())
    assert info.assignment is None
    assert info.request is not None, "the request is still decoded"
    (problem,) = info.problems
    assert problem.startswith("metadata.annotations[gpu-extender.io/assigned]: ")
    assert fragment in problem


def test_an_observed_cleared_by_the_binding_is_absent(pods: PodDecoder) -> None:
    """The Binding writes ``assigned-observed: ""`` (apiserver/binder.py): no problem, and the
    extender's ``assigned`` is what the pod holds."""
    assignment = Assignment("n1", WHOLE, (GpuGrant(0, 16384, whole=True),), type_id="t4")
    info = pods.decode(make_pod().gpus(1).assigned(assignment)
                       .annotation("gpu-extender.io/assigned-observed", "").obj())
    assert (info.assignment, info.problems) == (assignment, ())


def test_an_invalid_request_does_not_hide_what_the_pod_holds(pods: PodDecoder) -> None:
    assignment = Assignment("n1", WHOLE, (GpuGrant(0, 16384, whole=True),), type_id="t4")
    info = pods.decode(make_pod().gpus(1).accelerator("no-such-gpu").assigned(assignment).obj())
    assert info.request is None
    assert info.assignment == assignment
    assert len(info.problems) == 1


def test_decode_tolerates_missing_sections(pods: PodDecoder) -> None:
    info = pods.decode({})
    assert info.key == PodKey("", "", "")
    assert info.request is None and info.assignment is None and info.problems == ()


@pytest.mark.parametrize(
    "spec",
    [
        P({"containers": "abc"}, id="containers that are a string"),
        P({"containers": [{"resources": ["limits"]}]}, id="resources that are a list"),
        P({"containers": [{"resources": {"limits": ["nvidia.com/gpu"]}}]},
          id="limits that are a list"),
        P({"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}],
           "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
               "nodeSelectorTerms": ["not a term"]}}}}, id="a node selector term that is a string"),
    ],
)
def test_a_malformed_pod_shape_is_a_problem_not_a_crash(pods: PodDecoder,
                                                       spec: dict[str, Any]) -> None:
    info = pods.decode({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    assert info.request is None
    (problem,) = info.problems
    # the shape check runs inside the decoder (every entrance), naming the part's path
    assert problem.startswith("invalid pod: spec.")


@pytest.mark.parametrize(
    "pod",
    [
        P({"metadata": {"name": "p", "uid": "u"}, "status": ["x"]}, id="a status that is a list"),
        P({"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [
            {"resources": {"limits": {"nvidia.com/gpu": 1}}}]},
           "x": functools.reduce(lambda inner, _: {"a": inner}, range(300), {})},
          id="a part nested 300 deep"),
        P({"metadata": {"name": "p", "uid": "u", "annotations": {
            "gpu-extender.io/assigned": 7}}}, id="an annotation that is a number"),
    ],
)
def test_every_entrance_gets_the_shape_check(pods: PodDecoder, pod: dict[str, Any]) -> None:
    """Issue 20: the watch, relists and the cluster file decode through ``PodDecoder.decode``
    too; before, ``status: ["x"]`` raised ``AttributeError`` there and depth hit the recursion
    limit. Now each is one problem naming its path."""
    info = pods.decode(pod)
    assert info.request is None and info.assignment is None
    (problem,) = info.problems
    assert problem.startswith("invalid pod: ")


QUANTITY_LIKE = st.one_of(
    st.text(max_size=8), st.integers(-5, 5000), st.floats(allow_nan=True), st.none(),
    st.booleans(), st.sampled_from(["1", "2", "4Gi", "-1", "0.5", "500m", "1e3", "999"]),
)
GPU_RESOURCES = st.sampled_from([RESOURCE_GPU, RESOURCE_GPU_SHARED, RESOURCE_GPU_MEMORY,
                                 RESOURCE_GPU_MILLI, "nvidia.com/mig-1g.10gb",
                                 "nvidia.com/mig-1g.5gb", "nvidia.com/mig-0g.0gb"])
CONTAINERS = st.lists(st.dictionaries(GPU_RESOURCES, QUANTITY_LIKE, max_size=2), max_size=3)


@settings(max_examples=150, deadline=None)
@given(containers=CONTAINERS, init=CONTAINERS,
       label=st.sampled_from([None, "a100", "t4", "no-such-gpu", "a30"]))
def test_decode_never_raises(pods: PodDecoder, containers: list[dict[str, Any]],
                             init: list[dict[str, Any]], label: str | None) -> None:
    pod = make_pod()
    for limits in containers:
        pod.container(limits=limits)
    for limits in init:
        pod.init_container(limits=limits)
    if label is not None:
        pod.accelerator(label)
    info = pods.decode(pod.obj())
    if info.request is None:
        assert len(info.problems) <= 1
    else:
        assert info.problems == ()
        assert info.request.count >= 1
        assert 0 <= info.request.milli < 1000


def test_containers_that_add_up_beyond_any_node_are_refused_with_the_total(
        pods: PodDecoder) -> None:
    # 3 containers x 40 GPUs = 120 > 64, though each container alone is within bounds
    pod = make_pod()
    for _ in range(3):
        pod = pod.container(limits={"nvidia.com/gpu": "40"})
    with pytest.raises(RequestError) as raised:
        pods.request(pod.obj())
    assert raised.value.value == 120
    assert "add up to more GPUs than any node may have" in str(raised.value)
    assert "a total from 0 to 64" in str(raised.value)
