"""Node JSON -> NodeInfo: one GpuDevice per physical GPU from GFD / cloud labels and
allocatable, or exactly from the ``gpu-extender.io/gpus`` annotation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from extender.catalog import Catalog
from extender.config import load_config_text
from extender.kube.annotations import node_gpus_document
from extender.kube.decode_node import NodeDecoder
from extender.model import ANNOTATION_NODE_GPUS, GpuDevice, MigLayout, NodeInfo
from extender.platform import Platform, build_platform
from tests.builders import DYNAMIC_MIG, NodeBuilder, gpu_entry, make_node, static_mig

P = pytest.param
A100_80 = "NVIDIA-A100-SXM4-80GB"


@pytest.fixture(scope="module")
def nodes(platform: Platform) -> NodeDecoder:
    return platform.nodes


def summary(catalog: Catalog, info: NodeInfo) -> list[tuple[int, str, int, int]]:
    """(index, type id, memory MiB, replicas) per GPU: what most tests compare."""
    return [(g.index, catalog.id_of(g.type_index), g.memory_mib, g.replicas) for g in info.gpus]


def layouts(info: NodeInfo) -> list[tuple[tuple[str, int], ...]]:
    out = []
    for gpu in info.gpus:
        assert gpu.mig is not None and not gpu.mig.dynamic
        out.append(gpu.mig.instances)
    return out


# -- labels + allocatable ---------------------------------------------------------------------

# (node, expected [(index, type, memory MiB, replicas)])
FROM_LABELS = [
    P(make_node().gfd(A100_80, count=8, memory=81920).allocatable(gpu=8),
      [(i, "a100-80gb", 81920, 0) for i in range(8)],
      id="GFD product and nvidia.com/gpu 8 are eight whole A100-80GBs"),
    P(make_node().gfd("NVIDIA-A100-SXM4-40GB", count=2, memory=40536).allocatable(gpu=2),
      [(0, "a100-40gb", 40536, 0), (1, "a100-40gb", 40536, 0)],
      id="the GFD memory label overrides the catalog memory"),
    P(make_node().gfd("Tesla-T4").allocatable(gpu=1), [(0, "t4", 16384, 0)],
      id="without a memory label the catalog memory is used"),
    # time-slicing, not renamed: 2 GPUs x 4 replicas = 8 nvidia.com/gpu
    P(make_node().gfd("NVIDIA-L4-SHARED", count=2, replicas=4, sharing="time-slicing")
      .allocatable(gpu=8), [(0, "l4", 24576, 4), (1, "l4", 24576, 4)],
      id="time-sliced and not renamed: 8 nvidia.com/gpu over 2 GPUs with 4 replicas each"),
    # no count label: 8 / 4 replicas = 2 GPUs
    P(make_node().gfd("NVIDIA-L4-SHARED", replicas=4).allocatable(gpu=8),
      [(0, "l4", 24576, 4), (1, "l4", 24576, 4)],
      id="time-sliced without a count label: 8 / 4 replicas = 2 GPUs"),
    # renamed: nvidia.com/gpu.shared = 2 GPUs x 4 replicas
    P(make_node().gfd("NVIDIA-L4", count=2, replicas=4, sharing="time-slicing")
      .allocatable(shared=8), [(0, "l4", 24576, 4), (1, "l4", 24576, 4)],
      id="time-sliced and renamed: 8 nvidia.com/gpu.shared over 2 GPUs"),
    P(make_node().gfd("NVIDIA-L4", replicas=4).allocatable(shared=8),
      [(0, "l4", 24576, 4), (1, "l4", 24576, 4)],
      id="renamed without a count label: 8 / 4 replicas = 2 GPUs"),
    # MPS advertises replicas like time-slicing: 4 units on 1 GPU, not 4 whole GPUs
    P(make_node().gfd("NVIDIA-L4-SHARED", count=1, replicas=4, sharing="mps")
      .allocatable(gpu=4), [(0, "l4", 24576, 4)],
      id="MPS sharing: 4 nvidia.com/gpu are 4 replicas of 1 GPU"),
    P(make_node().gke("nvidia-l4", count=2, max_shared=2, sharing="mps").allocatable(gpu=4),
      [(0, "l4", 24576, 2), (1, "l4", 24576, 2)], id="GKE MPS: 4 units over 2 GPUs"),
    P(make_node().gfd("NVIDIA-L4", count=1, replicas=1).allocatable(gpu=1),
      [(0, "l4", 24576, 0)], id="one replica is not time-slicing"),
    # GKE
    P(make_node().gke("nvidia-tesla-a100", count=2).allocatable(gpu=2),
      [(0, "a100-40gb", 40960, 0), (1, "a100-40gb", 40960, 0)],
      id="GKE nvidia-tesla-a100 is the A100-40GB"),
    P(make_node().gke("nvidia-a100-80gb").allocatable(gpu=1), [(0, "a100-80gb", 81920, 0)],
      id="GKE nvidia-a100-80gb is the A100-80GB"),
    P(make_node().gke("nvidia-l4", count=1, max_shared=3, sharing="time-sharing")
      .allocatable(gpu=3), [(0, "l4", 24576, 3)],
      id="GKE time-sharing: 3 clients on 1 GPU"),
    # Karpenter
    P(make_node().karpenter("a100", memory=81920, count=8).allocatable(gpu=8),
      [(i, "a100-80gb", 81920, 0) for i in range(8)],
      id="Karpenter a100 with instance-gpu-memory 81920 narrows to the A100-80GB"),
    P(make_node().karpenter("a100", memory=40960, count=8).allocatable(gpu=8),
      [(i, "a100-40gb", 40960, 0) for i in range(8)],
      id="Karpenter a100 with instance-gpu-memory 40960 is the A100-40GB"),
    P(make_node().karpenter("a100").allocatable(gpu=1), [(0, "a100-40gb", 40960, 0)],
      id="Karpenter a100 without memory assumes the smaller A100"),
    P(make_node().karpenter("a10g", memory=24576, count=1).allocatable(gpu=1),
      [(0, "a10g", 24576, 0)], id="Karpenter a10g is the a10g, never the a10"),
    # AKS
    P(make_node().aks("T4", count=1).allocatable(gpu=1), [(0, "t4", 16384, 0)],
      id="AKS sku-gpu-name T4 is the t4"),
    P(make_node().aks("A100").allocatable(gpu=1), [(0, "a100-40gb", 40960, 0)],
      id="AKS A100 without memory assumes the smaller A100"),
    # priority between conventions
    P(make_node().karpenter("l4").gfd("Tesla-T4").allocatable(gpu=1), [(0, "t4", 16384, 0)],
      id="GFD wins over Karpenter when both name a type"),
    P(make_node().karpenter("a100", memory=81920).gfd(A100_80).allocatable(gpu=1),
      [(0, "a100-80gb", 81920, 0)],
      id="a Karpenter node running GFD reads the type from GFD and memory from Karpenter"),
]


@pytest.mark.parametrize(("node", "expected"), FROM_LABELS)
def test_gpus_from_labels_and_allocatable(nodes: NodeDecoder, catalog: Catalog,
                                          node: NodeBuilder,
                                          expected: list[tuple[int, str, int, int]]) -> None:
    info = nodes.decode(node.obj())
    assert info.problems == ()
    assert summary(catalog, info) == expected
    assert all(g.mig is None and g.healthy and g.uuid is None for g in info.gpus)


def test_type_name_keeps_the_raw_label(nodes: NodeDecoder) -> None:
    info = nodes.decode(make_node("n1").gfd("NVIDIA-L4-SHARED", replicas=2)
                        .allocatable(gpu=2).obj())
    assert info.name == "n1"
    assert info.type_name == "NVIDIA-L4-SHARED"


def test_renamed_sharing_without_count_or_replicas_assumes_one_gpu(nodes: NodeDecoder) -> None:
    info = nodes.decode(make_node().gfd("NVIDIA-L4").allocatable(shared=4).obj())
    assert [(g.index, g.replicas) for g in info.gpus] == [(0, 4)]
    (problem,) = info.problems
    assert "nvidia.com/gpu.shared=4 without a GPU count or replica label" in problem


# -- MIG mixed strategy -----------------------------------------------------------------------

# (node type, {profile: count}, expected static layouts, one per GPU)
MIG_PACKING = [
    P("NVIDIA-A100-SXM4-80GB", {"1g.10gb": 7},
      [tuple(("1g.10gb", s) for s in range(7))],
      id="7x 1g.10gb fill one A100-80GB at starts 0..6"),
    P("NVIDIA-A100-SXM4-80GB", {"3g.40gb": 2}, [(("3g.40gb", 0), ("3g.40gb", 4))],
      id="2x 3g.40gb share one A100-80GB at starts 0 and 4"),
    P("NVIDIA-A100-SXM4-80GB", {"4g.40gb": 1, "3g.40gb": 1}, [(("4g.40gb", 0), ("3g.40gb", 4))],
      id="4g.40gb goes first to its only start 0 so the 3g.40gb fits at 4"),
    # 7g takes all 8 slots, so the two 1g need a second GPU
    P("NVIDIA-A100-SXM4-80GB", {"7g.80gb": 1, "1g.10gb": 2},
      [(("7g.80gb", 0),), (("1g.10gb", 0), ("1g.10gb", 1))],
      id="a 7g.80gb plus 2x 1g.10gb need two GPUs"),
    P("NVIDIA-A100-SXM4-80GB", {"3g.40gb": 3},
      [(("3g.40gb", 0), ("3g.40gb", 4)), (("3g.40gb", 0),)],
      id="3x 3g.40gb need two GPUs"),
    # 3g at 0 covers slots 0..3; 2g at 4 covers 4..5; 1g at 6
    P("NVIDIA-A100-SXM4-80GB", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1},
      [(("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6))],
      id="3g plus 2g plus 1g fit on one A100-80GB at 0, 4 and 6"),
    # on the 40 GB, 1g.10gb spans 2 slots at even starts; 2g.10gb may not start at 6
    P("NVIDIA-A100-SXM4-40GB", {"2g.10gb": 3, "1g.10gb": 1},
      [(("2g.10gb", 0), ("2g.10gb", 2), ("2g.10gb", 4), ("1g.10gb", 6))],
      id="on the A100-40GB 3x 2g.10gb take 0, 2, 4 leaving 6 for the 1g.10gb"),
    # 8 > 7 starts: two GPUs at least; with no count label the split is even (4 + 4), as
    # mig-parted applies one layout to every GPU.
    P("NVIDIA-A100-SXM4-40GB", {"1g.5gb": 8},
      [tuple(("1g.5gb", s) for s in range(4))] * 2,
      id="8x 1g.5gb overflow the 7 starts of one A100-40GB: split evenly over two"),
    P("NVIDIA-A30", {"2g.12gb": 1, "1g.6gb": 2},
      [(("2g.12gb", 0), ("1g.6gb", 2), ("1g.6gb", 3))],
      id="an A30 packs 2g.12gb at 0 and two 1g.6gb at 2 and 3"),
    P("NVIDIA-H100-80GB-HBM3", {"1g.20gb": 4}, [tuple(("1g.20gb", s) for s in (0, 2, 4, 6))],
      id="4x 1g.20gb on an H100 at the even starts"),
]


@pytest.mark.parametrize(("product", "counts", "expected"), MIG_PACKING)
def test_mig_mixed_counts_are_packed_into_static_layouts(
        nodes: NodeDecoder, catalog: Catalog, product: str, counts: dict[str, int],
        expected: list[tuple[tuple[str, int], ...]]) -> None:
    info = nodes.decode(make_node().gfd(product).mig(counts).obj())
    assert info.problems == ()
    assert layouts(info) == expected
    assert [g.index for g in info.gpus] == list(range(len(expected)))
    type_index = catalog.resolve_node_type(product)
    assert {g.type_index for g in info.gpus} == {type_index}


def test_whole_gpus_and_mig_gpus_on_one_node(nodes: NodeDecoder, catalog: Catalog) -> None:
    node = make_node().gfd(A100_80, memory=81920).allocatable(gpu=2).mig({"1g.10gb": 7})
    info = nodes.decode(node.obj())
    assert info.problems == ()
    assert [g.mig for g in info.gpus] == [
        None, None, MigLayout(False, tuple(("1g.10gb", s) for s in range(7)))]
    assert [g.index for g in info.gpus] == [0, 1, 2]


@pytest.mark.parametrize(
    ("node", "fragment", "n_gpus"),
    [
        P(make_node().gfd(A100_80).mig({"1g.5gb": 2, "1g.10gb": 1}),
          "nvidia.com/mig-1g.5gb is not a profile of a100-80gb; ignored", 1,
          id="a profile the type does not have is ignored"),
        P(make_node().gfd("Tesla-T4").mig({"1g.10gb": 1}),
          "advertises MIG resources but its GPU type has no MIG geometry", 0,
          id="MIG resources on a type without MIG"),
    ],
)
def test_impossible_mig_resources_are_problems(nodes: NodeDecoder, node: NodeBuilder,
                                               fragment: str, n_gpus: int) -> None:
    info = nodes.decode(node.obj())
    assert any(fragment in p for p in info.problems), info.problems
    assert len(info.gpus) == n_gpus


# -- custom label mappings --------------------------------------------------------------------

CUSTOM = """
nodeLabels:
  presets: [gfd, eks-karpenter]
  custom:
    - key: k8s.amazonaws.com/accelerator
      values: {nvidia-tesla-t4: t4, nvidia-a100: a100}
    - key: example.com/gpu-model
"""


@pytest.fixture(scope="module")
def custom_nodes() -> tuple[NodeDecoder, Catalog]:
    platform = build_platform(load_config_text(CUSTOM))
    return platform.nodes, platform.catalog


@pytest.mark.parametrize(
    ("node", "expected", "problem"),
    [
        P(make_node().label("k8s.amazonaws.com/accelerator", "nvidia-tesla-t4")
          .allocatable(gpu=1), "t4", None, id="a custom mapping names the type"),
        P(make_node().label("k8s.amazonaws.com/accelerator", "nvidia-tesla-t4")
          .gfd("NVIDIA-L4").allocatable(gpu=1), "t4", None,
          id="a custom mapping wins over the presets"),
        P(make_node().label("example.com/gpu-model", "NVIDIA-L40S").allocatable(gpu=1), "l40s",
          None, id="a mapping without values looks the label value up in the catalog"),
        P(make_node().label("k8s.amazonaws.com/accelerator", "nvidia-a100").allocatable(gpu=1),
          "a100-40gb", None, id="a mapping to a family is narrowed like a family label"),
        P(make_node().label("k8s.amazonaws.com/accelerator", "nvidia-tesla-k80")
          .allocatable(gpu=1), "unknown",
          "k8s.amazonaws.com/accelerator='nvidia-tesla-k80' is not in this label's map under "
          "nodeLabels.custom (it maps: nvidia-tesla-t4, nvidia-a100); add it there with the "
          "catalog type it means",
          id="a value the mapping does not list is an unknown type, and the map is to blame"),
        P(make_node().label("example.com/gpu-model", "NVIDIA-K80").allocatable(gpu=1),
          "unknown", "example.com/gpu-model='NVIDIA-K80' is not in the accelerator catalog "
          "(add it under `accelerators` with this name in `aliases`)",
          id="a mapping without values blames the catalog"),
        P(make_node().gke("nvidia-l4").allocatable(gpu=1), "unknown",
          "advertises GPUs but has no GPU type label (expected one of: "
          "k8s.amazonaws.com/accelerator, example.com/gpu-model, nvidia.com/gpu.product, "
          "karpenter.k8s.aws/instance-gpu-name, or node.kubernetes.io/instance-type of a known "
          "instance type)",
          id="a preset left out of the config is not read"),
    ],
)
def test_custom_label_mappings_from_config(custom_nodes: tuple[NodeDecoder, Catalog],
                                           node: NodeBuilder, expected: str,
                                           problem: str | None) -> None:
    decoder, catalog = custom_nodes
    info = decoder.decode(node.obj())
    assert [catalog.id_of(g.type_index) for g in info.gpus] == [expected]
    assert info.problems == (() if problem is None else (problem,))


def test_preset_order_in_the_config_decides(catalog: Catalog) -> None:
    platform = build_platform(load_config_text("nodeLabels: {presets: [eks-karpenter, gfd]}"))
    node = make_node().gfd("Tesla-T4").karpenter("l4").allocatable(gpu=1)
    (gpu,) = platform.nodes.decode(node.obj()).gpus
    assert platform.catalog.id_of(gpu.type_index) == "l4"


# -- unknown types and nodes without GPUs -----------------------------------------------------

def test_an_unknown_gpu_model_is_the_unknown_type_with_a_problem(nodes: NodeDecoder,
                                                                 catalog: Catalog) -> None:
    info = nodes.decode(make_node().gfd("NVIDIA-RTX-9090", memory=32768).allocatable(gpu=2).obj())
    assert summary(catalog, info) == [(0, "unknown", 32768, 0), (1, "unknown", 32768, 0)]
    assert {g.type_index for g in info.gpus} == {catalog.unknown_index}
    assert info.type_name == "NVIDIA-RTX-9090"
    assert info.problems == (
        "nvidia.com/gpu.product='NVIDIA-RTX-9090' is not in the accelerator catalog "
        "(add it under `accelerators` with this name in `aliases`)",)


def test_gpus_without_a_type_label_are_unknown_with_a_problem(nodes: NodeDecoder,
                                                              catalog: Catalog) -> None:
    info = nodes.decode(make_node().allocatable(gpu=4).obj())
    assert [g.type_index for g in info.gpus] == [catalog.unknown_index] * 4
    (problem,) = info.problems
    assert problem.startswith("advertises GPUs but has no GPU type label (expected one of: "
                              "nvidia.com/gpu.product, cloud.google.com/gke-accelerator")


@pytest.mark.parametrize(
    "node",
    [
        P(make_node(), id="a CPU node has no GPUs"),
        P(make_node().gfd(A100_80, count=8), id="a type label without allocatable GPUs"),
        P(make_node().gfd(A100_80).allocatable(gpu=0), id="zero allocatable GPUs"),
        P(make_node().gfd(A100_80).allocatable(gpu="many"),
          id="an unparseable GPU count is no GPU"),
    ],
)
def test_nodes_without_gpus(nodes: NodeDecoder, node: NodeBuilder) -> None:
    info = nodes.decode(node.obj())
    assert info.gpus == ()
    assert info.problems == ()


@pytest.mark.parametrize(
    ("cpu", "memory", "expected"),
    [
        P("32", "256Gi", (32000, 262144), id="32 cores and 256Gi are 32000m and 262144 MiB"),
        P("7910m", "31Gi", (7910, 31744), id="millicores stay; 31 * 1024 = 31744 MiB"),
        P("4", "16000000Ki", (4000, 15625), id="16000000Ki / 1024 = 15625 MiB"),
        P("lots", "x", (0, 0), id="unparseable CPU and memory are zero"),
    ],
)
def test_cpu_and_memory_allocatable(nodes: NodeDecoder, cpu: str, memory: str,
                                    expected: tuple[int, int]) -> None:
    info = nodes.decode(make_node().allocatable(cpu=cpu, memory=memory).obj())
    assert (info.cpu_milli, info.memory_mib) == expected


def test_a_node_without_status_decodes_to_nothing(nodes: NodeDecoder) -> None:
    info = nodes.decode({"metadata": {"name": "bare"}})
    assert (info.name, info.gpus, info.cpu_milli, info.memory_mib) == ("bare", (), 0, 0)


# -- the gpu-extender.io/gpus annotation ------------------------------------------------------

def test_the_annotation_wins_over_labels_and_describes_mixed_models(
        nodes: NodeDecoder, catalog: Catalog) -> None:
    node = (make_node().gfd("Tesla-T4", count=8).allocatable(gpu=8)
            .gpus_annotation([
                gpu_entry(3, "t4", 15360, uuid="GPU-t4", replicas=4),
                gpu_entry(0, "a100-80gb", 81920, uuid="GPU-a", mig=DYNAMIC_MIG),
                gpu_entry(1, "a100-80gb", 81920, uuid="GPU-b",
                          mig=static_mig(("3g.40gb", 0), ("3g.40gb", 4))),
                gpu_entry(2, "h100-80gb", 81559, uuid="GPU-h", healthy=False),
            ]))
    info = nodes.decode(node.obj())
    assert info.problems == ()
    a100, h100, t4 = (catalog.index_of(t) for t in ("a100-80gb", "h100-80gb", "t4"))
    assert info.gpus == (
        GpuDevice(0, a100, 81920, uuid="GPU-a", mig=MigLayout(dynamic=True)),
        GpuDevice(1, a100, 81920, uuid="GPU-b",
                  mig=MigLayout(False, (("3g.40gb", 0), ("3g.40gb", 4)))),
        GpuDevice(2, h100, 81559, uuid="GPU-h", healthy=False),
        GpuDevice(3, t4, 15360, uuid="GPU-t4", replicas=4),
    ), "sorted by index, exactly as published"


@pytest.mark.parametrize(
    ("entry", "expected_type", "memory"),
    [
        P(gpu_entry(0, "a100-80gb"), "a100-80gb", 81920,
          id="memory defaults to the catalog's for the type"),
        P(gpu_entry(0, "a100", 81920), "a100-80gb", 81920,
          id="a family is narrowed by the published memory"),
        P(gpu_entry(0, "NVIDIA-H100-80GB-HBM3", 81559), "h100-80gb", 81559,
          id="an alias is accepted as the type"),
    ],
)
def test_annotation_types_resolve_like_labels(nodes: NodeDecoder, catalog: Catalog,
                                              entry: dict[str, Any], expected_type: str,
                                              memory: int) -> None:
    (gpu,) = nodes.decode(make_node().gpus_annotation([entry]).obj()).gpus
    assert (catalog.id_of(gpu.type_index), gpu.memory_mib) == (expected_type, memory)


def test_an_unknown_model_in_the_annotation_is_unknown_with_a_problem(
        nodes: NodeDecoder, catalog: Catalog) -> None:
    info = nodes.decode(make_node().gpus_annotation(
        [gpu_entry(0, "rtx-9090", 32768), gpu_entry(1, "t4")]).obj())
    assert [g.type_index for g in info.gpus] == [catalog.unknown_index, catalog.index_of("t4")]
    assert info.problems == ("gpu-extender.io/gpus gpus[0]: unknown GPU type 'rtx-9090'",)


def test_an_empty_annotation_list_means_no_gpus(nodes: NodeDecoder) -> None:
    info = nodes.decode(make_node().gfd("Tesla-T4").allocatable(gpu=2).gpus_annotation([]).obj())
    assert info.gpus == ()
    assert info.problems == ()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        P("{not json", "not JSON", id="text that is not JSON"),
        P('{"version": 2, "gpus": []}', "must be an object with version 1",
          id="an unsupported version"),
        P('[{"index": 0}]', "must be a JSON object, not a list", id="a bare list"),
        P('{"version": 1, "gpus": {"0": {}}}', "'gpus' must be a list", id="gpus not a list"),
        P('{"version": 1}', "'gpus' must be a list", id="gpus missing"),
    ],
)
def test_a_malformed_annotation_falls_back_to_labels(nodes: NodeDecoder, catalog: Catalog,
                                                     text: str, fragment: str) -> None:
    node = make_node().gfd("Tesla-T4", count=2).allocatable(gpu=2)
    info = nodes.decode(node.annotation(ANNOTATION_NODE_GPUS, text).obj())
    assert summary(catalog, info) == [(0, "t4", 16384, 0), (1, "t4", 16384, 0)]
    (problem,) = info.problems
    assert problem.startswith("metadata.annotations[gpu-extender.io/gpus]: ")
    assert fragment in problem
    assert problem.endswith("falling back to labels")


# Each bad entry is dropped with a problem; the good entry at index 5 is kept.
BAD_ENTRIES = [
    P(7, "GPU ignored", id="an entry that is not an object"),
    P({"type": "t4"}, "KeyError('index')", id="an entry without an index"),
    P({"index": 0}, "KeyError('type')", id="an entry without a type"),
    P(gpu_entry(-1, "t4"), "index, memoryMiB and replicas must be >= 0", id="a negative index"),
    P(gpu_entry(0, "t4", replicas=-2), "must be >= 0", id="negative replicas"),
    P(gpu_entry(0, "t4") | {"memoryMiB": "lots"}, "ValueError", id="a non-numeric memory"),
    P(gpu_entry(5, "t4"), "duplicate index 5", id="a second GPU with the same index"),
    P(gpu_entry(0, "t4", mig=DYNAMIC_MIG), "type 't4' has no MIG geometry in the catalog",
      id="MIG on a type without MIG"),
    P(gpu_entry(0, "a100-80gb", mig={"mode": "dynamc"}),
      "mig.mode 'dynamc' (accepted: dynamic, static)", id="a misspelt MIG mode"),
    P(gpu_entry(0, "a100-80gb", mig=[1]), "GPU ignored", id="a MIG value that is not an object"),
    P(gpu_entry(0, "a100-80gb", mig=static_mig(("1g.5gb", 0))),
      "MIG profile '1g.5gb' is not a profile of a100-80gb", id="a static profile of another type"),
    P(gpu_entry(0, "a100-80gb", mig=static_mig(("3g.40gb", 2))),
      "MIG 3g.40gb cannot start at 2 (accepted starts: 0, 4)", id="a static instance at an "
                                                                  "illegal start"),
    P(gpu_entry(0, "a100-80gb", mig=static_mig(("4g.40gb", 0), ("1g.10gb", 3))),
      "MIG 1g.10gb at start 3 overlaps another instance", id="overlapping static instances"),
    P(gpu_entry(0, "a100-80gb", mig={"mode": "static", "instances": [{"profile": "1g.10gb"}]}),
      "KeyError('start')", id="a static instance without a start"),
    P(gpu_entry(0, "t4") | {"healthy": "false"}, "healthy must be true or false, got 'false'",
      id="a health flag that is a string"),
    P(gpu_entry(0, "t4") | {"uuid": ["x"]}, "uuid must be a string, got ['x']",
      id="a uuid that is not a string (a share bound there failed with internal error)"),
]


@pytest.mark.parametrize(("bad", "fragment"), BAD_ENTRIES)
def test_a_malformed_entry_drops_that_gpu_with_a_problem(nodes: NodeDecoder, catalog: Catalog,
                                                         bad: object, fragment: str) -> None:
    text = orjson.dumps({"version": 1, "gpus": [gpu_entry(5, "l4"), bad]}).decode()
    info = nodes.decode(make_node().annotation(ANNOTATION_NODE_GPUS, text).obj())
    assert summary(catalog, info) == [(5, "l4", 24576, 0)]
    (problem,) = info.problems
    assert problem.startswith("gpu-extender.io/gpus gpus[1]: ")
    assert fragment in problem


def test_node_gpus_document_is_versioned_json() -> None:
    text = node_gpus_document([gpu_entry(0, "t4")])
    assert orjson.loads(text) == {"version": 1, "gpus": [
        {"index": 0, "uuid": "GPU-0000", "type": "t4"}]}


# -- which resource name time-slice replicas serve ------------------------------------------

@pytest.mark.parametrize(
    ("builder", "shared"),
    [
        pytest.param(make_node("n").gfd("NVIDIA-L4", count=2, replicas=4,
                                        sharing="time-slicing").allocatable(gpu=8),
                     False, id="replicas advertised as nvidia.com/gpu serve nvidia.com/gpu"),
        pytest.param(make_node("n").gfd("NVIDIA-L4", count=2, replicas=4,
                                        sharing="time-slicing").allocatable(shared=8),
                     True, id="renamed replicas serve only nvidia.com/gpu.shared"),
        pytest.param(make_node("n").gpus_annotation([gpu_entry(0, "l4", replicas=4)])
                     .allocatable(shared=4),
                     True, id="the annotation inherits the node's advertised name"),
        pytest.param(make_node("n").gpus_annotation(
            [{**gpu_entry(0, "l4", replicas=4), "replicaResource": "nvidia.com/gpu"}])
                     .allocatable(shared=4),
                     False, id="an annotation entry may name the resource itself"),
    ],
)
def test_replicas_record_the_resource_name_they_serve(nodes: NodeDecoder, builder: NodeBuilder,
                                                      shared: bool) -> None:
    info = nodes.decode(builder.obj())
    assert info.gpus and all(g.replicas == 4 for g in info.gpus)
    assert {g.replicas_shared for g in info.gpus} == {shared}


def test_an_unknown_replica_resource_is_a_problem(nodes: NodeDecoder) -> None:
    node = make_node("n").gpus_annotation(
        [{**gpu_entry(0, "l4", replicas=4), "replicaResource": "nvidia.com/gpux"}]).obj()
    info = nodes.decode(node)
    assert info.gpus == ()
    assert "replicaResource 'nvidia.com/gpux'" in info.problems[0]


@pytest.mark.parametrize(
    ("node", "gpus", "problem"),
    [
        pytest.param(make_node().gfd("Tesla-T4").allocatable(gpu=20000), 64, "more than 64 GPUs",
                     id="nvidia.com/gpu 20000 is modelled as 64 GPUs, not 20,000 objects"),
        pytest.param(make_node().gfd("Tesla-T4").allocatable(gpu="1e18"), 64, "more than 64",
                     id="1e18 GPUs is cut before any object is built"),
        pytest.param(make_node().gfd("Tesla-T4", count=2, replicas=99999999999)
                     .allocatable(gpu=4), 2, "capped",
                     id="99999999999 replicas per GPU are capped at 1024 (int16 inventory)"),
        pytest.param(make_node().gfd("Tesla-T4", memory=10**12).allocatable(gpu=1), 1,
                     "capped", id="a 10^12 MiB GPU is capped at 1 TiB"),
    ],
)
def test_absurd_nodes_are_bounded_and_say_so(nodes: NodeDecoder, node: NodeBuilder, gpus: int,
                                             problem: str) -> None:
    info = nodes.decode(node.obj())
    assert len(info.gpus) == gpus
    assert all(g.replicas <= 1024 and g.memory_mib <= 1 << 20 for g in info.gpus)
    assert any(problem in p for p in info.problems), info.problems


def test_a_gpus_annotation_index_beyond_any_gpu_is_a_problem_not_an_array_overflow(
        nodes: NodeDecoder) -> None:
    node = make_node().gpus_annotation([gpu_entry(0, "t4"), gpu_entry(70000, "t4")]).obj()
    info = nodes.decode(node)
    assert [g.index for g in info.gpus] == [0]
    assert any("beyond any GPU" in p for p in info.problems)
