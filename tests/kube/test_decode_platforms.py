"""Every platform's GPU nodes as the platform really labels them: one row per setup, with the
page or source file each row's labels were read from. Rows show what the node says
(labels, allocatable) and what the extender makes of it (physical GPUs, MIG layout, problems).
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.config import load_config_text
from extender.model import NodeInfo
from extender.platform import Platform, build_platform

P = pytest.param


def node(labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "64Gi", **allocatable}}}


def shape(platform: Platform, info: NodeInfo) -> list[tuple[str, int, int, tuple[str, ...]]]:
    """(type, memory MiB, replicas, MIG instance profiles) per physical GPU."""
    return [(platform.catalog.id_of(g.type_index), g.memory_mib, g.replicas,
             tuple(p for p, _ in g.mig.instances) if g.mig else ())
            for g in info.gpus]


SEVEN_1G5 = ("1g.5gb",) * 7
SEVEN_1G10 = ("1g.10gb",) * 7

# (labels, allocatable, expected shape, fragment expected in problems or "" for none)
PLATFORMS = [
    # https://cloud.google.com/kubernetes-engine/docs/how-to/gpus-multi: a pool created with
    # --accelerator type=nvidia-tesla-a100,count=1,gpu-partition-size=1g.5gb advertises
    # nvidia.com/gpu: 7 and labels gke-gpu-partition-size. One physical A100 with 7 instances,
    # each 4864 MiB, never seven 40 GB GPUs.
    P({"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
       "cloud.google.com/gke-accelerator-count": "1",
       "cloud.google.com/gke-gpu-partition-size": "1g.5gb"}, {"nvidia.com/gpu": "7"},
      [("a100-40gb", 40960, 0, SEVEN_1G5)], "", id="GKE MIG pool 1g.5gb, one A100"),
    # count=2 with 3g.20gb: 2 instances per GPU, 4 advertised.
    P({"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
       "cloud.google.com/gke-accelerator-count": "2",
       "cloud.google.com/gke-gpu-partition-size": "3g.20gb"}, {"nvidia.com/gpu": "4"},
      [("a100-40gb", 40960, 0, ("3g.20gb",) * 2)] * 2, "", id="GKE MIG pool 3g.20gb, two A100s"),
    # https://cloud.google.com/kubernetes-engine/docs/concepts/timesharing-gpus:
    # gpu-sharing-strategy=time-sharing, max-shared-clients-per-gpu=10 on one T4 -> 10 units.
    P({"cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
       "cloud.google.com/gke-accelerator-count": "1",
       "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
       "cloud.google.com/gke-max-shared-clients-per-gpu": "10"}, {"nvidia.com/gpu": "10"},
      [("t4", 16384, 10, ())], "", id="GKE time-sharing pool, 10 clients on one T4"),
    # GKE allows time-sharing on MIG partitions (timesharing-gpus page, "time-sharing with
    # multi-instance GPUs"): 7 instances x 3 clients = 21 units. Counted conservatively.
    P({"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
       "cloud.google.com/gke-accelerator-count": "1",
       "cloud.google.com/gke-gpu-partition-size": "1g.5gb",
       "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
       "cloud.google.com/gke-max-shared-clients-per-gpu": "3"}, {"nvidia.com/gpu": "21"},
      [("a100-40gb", 40960, 0, SEVEN_1G5)], "counted as one pod per instance",
      id="GKE time-sharing on a MIG partition"),
    # k8s-device-plugin README / internal/lm/resource.go, single strategy: the product gets
    # -MIG-<profile>, gpu.memory and gpu.count describe one MIG device (anchors.md 4.3).
    P({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
       "nvidia.com/gpu.count": "7", "nvidia.com/gpu.memory": "9984",
       "nvidia.com/mig.strategy": "single"}, {"nvidia.com/gpu": "7"},
      [("a100-80gb", 81920, 0, SEVEN_1G10)], "", id="GFD single strategy, one A100-80GB"),
    P({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
       "nvidia.com/gpu.count": "56", "nvidia.com/gpu.memory": "9984",
       "nvidia.com/mig.strategy": "single",
       "node.kubernetes.io/instance-type": "p4de.24xlarge"}, {"nvidia.com/gpu": "56"},
      [("a100-80gb", 81920, 0, SEVEN_1G10)] * 8,
      "", id="GFD single strategy on p4de.24xlarge: 8 GPUs from the table, 56 instances"),
    # Single strategy with time-slicing: the device plugin replicates each MIG device and GFD
    # adds gpu.replicas and the -SHARED suffix.
    P({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED",
       "nvidia.com/gpu.count": "7", "nvidia.com/gpu.replicas": "2",
       "nvidia.com/gpu.sharing-strategy": "time-slicing",
       "nvidia.com/mig.strategy": "single"}, {"nvidia.com/gpu": "14"},
      [("a100-40gb", 40960, 0, SEVEN_1G5)], "counted as one pod per instance",
      id="GFD single strategy with 2 replicas"),
    # AKS (MicrosoftDocs/azure-docs articles/aks/gpu-multi-instance.md): Standard_ND96asr_v4
    # with --gpu-instance-profile MIG1g shows "nvidia.com/gpu: 56" (single strategy). AKS sets
    # no label naming the profile (articles/aks/reserved-labels-reference.md lists only
    # kubernetes.azure.com/accelerator=nvidia): 56 units on the 8 GPUs the instance type has is
    # 7 per GPU, which only 1g.5gb gives. Inferred, and said so.
    P({"node.kubernetes.io/instance-type": "Standard_ND96asr_v4",
       "kubernetes.azure.com/accelerator": "nvidia",
       "kubernetes.azure.com/agentpool": "mignode"}, {"nvidia.com/gpu": "56"},
      [("a100-40gb", 40960, 0, SEVEN_1G5)] * 8, "inferred MIG 1g.5gb",
      id="AKS MIG1g pool, single strategy, no GFD"),
    # The same pool with the mixed strategy: "nvidia.com/mig-1g.5gb: 56" (same page).
    P({"node.kubernetes.io/instance-type": "Standard_ND96asr_v4",
       "kubernetes.azure.com/accelerator": "nvidia"}, {"nvidia.com/mig-1g.5gb": "56"},
      [("a100-40gb", 40960, 0, SEVEN_1G5)] * 8, "", id="AKS MIG1g pool, mixed strategy"),
    # AKS MIG2g: 3 instances per GPU -> 2g.10gb.
    P({"node.kubernetes.io/instance-type": "Standard_ND96asr_v4"}, {"nvidia.com/gpu": "24"},
      [("a100-40gb", 40960, 0, ("2g.10gb",) * 3)] * 8, "inferred MIG 2g.10gb",
      id="AKS MIG2g pool, single strategy"),
    # A T4 has no MIG: 4 units on 1 GPU with no sharing label can only be time-slicing.
    P({"node.kubernetes.io/instance-type": "g4dn.xlarge"}, {"nvidia.com/gpu": "4"},
      [("t4", 16384, 4, ())], "inferred time-slicing", id="more units than a T4 node has GPUs"),
    # The setup: a team sharing by a per-node memory resource, no GFD at all.
    P({"node.kubernetes.io/instance-type": "g4dn.xlarge"},
      {"nvidia.com/gpu": "1", "veriff.com/gpu-memory": "16"},
      [("t4", 16384, 0, ())], "", id="g4dn.xlarge known only by its instance type"),
    P({"node.kubernetes.io/instance-type": "p4d.24xlarge"}, {"nvidia.com/gpu": "8"},
      [("a100-40gb", 40960, 0, ())] * 8, "", id="p4d.24xlarge, whole GPUs"),
    P({"node.kubernetes.io/instance-type": "a3-highgpu-8g"}, {"nvidia.com/gpu": "8"},
      [("h100-80gb", 81920, 0, ())] * 8, "", id="GCE a3-highgpu-8g without the GKE label"),
    P({"node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4"},
      {"nvidia.com/gpu": "1"}, [("a100-80gb", 81920, 0, ())], "",
      id="Azure NC24ads A100 v4 (case-insensitive match)"),
    # A type label wins over the table: GFD says L4 on a machine the table calls g4dn.
    P({"node.kubernetes.io/instance-type": "g4dn.xlarge", "nvidia.com/gpu.product": "NVIDIA-L4"},
      {"nvidia.com/gpu": "1"}, [("l4", 24576, 0, ())], "", id="a type label beats the table"),
    # flytepropeller's default gpu-device-node-label (flytek8s/config/config.go) with the
    # device string flytekit's A100 constant writes (flytekit/extras/accelerators.py).
    P({"k8s.amazonaws.com/accelerator": "nvidia-tesla-a100"}, {"nvidia.com/gpu": "8"},
      [("a100-40gb", 40960, 0, ())] * 8, "", id="Flyte device label, whole A100s"),
    P({"k8s.amazonaws.com/accelerator": "nvidia-tesla-a100",
       "k8s.amazonaws.com/gpu-partition-size": "1g.5gb"}, {"nvidia.com/gpu": "7"},
      [("a100-40gb", 40960, 0, SEVEN_1G5)], "", id="Flyte partition label, one A100"),
    P({"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
       "cloud.google.com/gke-gpu-partition-size": "9g.99gb"}, {"nvidia.com/gpu": "7"},
      [], "'9g.99gb' is not a MIG profile of a100-40gb", id="an impossible partition"),
]


@pytest.mark.parametrize(("labels", "allocatable", "expected", "problem"), PLATFORMS)
def test_platform_nodes_decode_as_they_really_are(
        platform: Platform, labels: dict[str, str], allocatable: dict[str, str],
        expected: list[tuple[str, int, int, tuple[str, ...]]], problem: str) -> None:
    info = platform.nodes.decode(node(labels, allocatable))
    assert shape(platform, info) == expected
    if problem:
        assert any(problem in p for p in info.problems), info.problems
    else:
        assert info.problems == ()


def test_partition_instances_sit_at_legal_disjoint_starts(platform: Platform) -> None:
    info = platform.nodes.decode(node(
        {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
         "cloud.google.com/gke-gpu-partition-size": "2g.10gb"}, {"nvidia.com/gpu": "3"}))
    assert info.gpus[0].mig is not None
    # 2g.10gb spans 2 slots and may start at 0, 2, 4 (MIG guide -lgipp)
    assert info.gpus[0].mig.instances == (("2g.10gb", 0), ("2g.10gb", 2), ("2g.10gb", 4))


def test_config_instance_types_add_and_override_the_table() -> None:
    platform = build_platform(load_config_text(
        "nodeLabels:\n  instanceTypes:\n"
        "    onprem.dgx-a100: {type: a100-80gb, count: 8}\n"
        "    g4dn.xlarge: {type: l4, count: 1}\n"))
    dgx = platform.nodes.decode(node({"node.kubernetes.io/instance-type": "onprem.dgx-a100"},
                                     {"nvidia.com/gpu": "8"}))
    assert shape(platform, dgx) == [("a100-80gb", 81920, 0, ())] * 8
    g4dn = platform.nodes.decode(node({"node.kubernetes.io/instance-type": "g4dn.xlarge"},
                                      {"nvidia.com/gpu": "1"}))
    assert shape(platform, g4dn) == [("l4", 24576, 0, ())]


def test_flyte_label_keys_follow_the_config() -> None:
    platform = build_platform(load_config_text(
        "nodeLabels:\n  flyte:\n    deviceNodeLabel: example.com/gpu\n"
        "    partitionSizeNodeLabel: example.com/mig\n"))
    info = platform.nodes.decode(node({"example.com/gpu": "nvidia-tesla-a100",
                                       "example.com/mig": "3g.20gb"}, {"nvidia.com/gpu": "2"}))
    assert shape(platform, info) == [("a100-40gb", 40960, 0, ("3g.20gb",) * 2)]
    # the default keys are no longer read
    plain = platform.nodes.decode(node({"k8s.amazonaws.com/accelerator": "nvidia-tesla-a100"},
                                       {"nvidia.com/gpu": "1"}))
    assert plain.problems and "no GPU type label" in plain.problems[0]


@pytest.mark.parametrize(("name", "expected"), [
    # anchors-2026-12.md section 6: Flyte device strings the catalog used to miss
    ("nvidia-tesla-h100", "h100-80gb"), ("A100 80G", "a100-80gb"), ("H100 80G", "h100-80gb"),
    ("H100 MEGA 80G", "h100-80gb"), ("nvidia-rtx-pro-6000", "rtx-pro-6000"),
    ("RTX PRO 6000", "rtx-pro-6000"), ("nvidia-gb200", "gb200"), ("nvidia-l4-vws", "l4"),
    ("nvidia-h200", "h200-141gb"), ("nvidia-tesla-a100", "a100-40gb"),
])
def test_flyte_device_strings_name_one_type(platform: Platform, name: str,
                                            expected: str) -> None:
    resolved = platform.catalog.resolve(name)
    assert resolved is not None
    assert {platform.catalog.id_of(i) for i in resolved} == {expected}
