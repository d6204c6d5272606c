"""NVML fixture -> the gpus annotation, read back by the extender's own NodeDecoder (the
schema's single source), for whole, MIG (mixed profiles), time-sliced and unhealthy GPUs."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from extender.agent.inventory import Sharing, build_inventory
from extender.agent.nvml_fixture import parse_fixture
from extender.catalog import Catalog
from extender.model import ANNOTATION_NODE_GPUS, RESOURCE_GPU, RESOURCE_GPU_SHARED, MigLayout
from extender.platform import Platform

P = pytest.param


def gpu(index: int, name: str = "NVIDIA A100-SXM4-80GB", memory: int = 81920,
        **extra: Any) -> dict[str, Any]:
    return {"index": index, "uuid": f"GPU-{index}", "name": name, "memoryTotalMiB": memory,
            **extra}


def publish(catalog: Catalog, gpus: list[dict[str, Any]], sharing: Sharing | None = None
            ) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    inventory = build_inventory(parse_fixture({"driverVersion": "570", "gpus": gpus}),
                                catalog, sharing or Sharing())
    doc = orjson.loads(inventory.document())
    return doc["gpus"], inventory.problems


def decoded(platform: Platform, entries: list[dict[str, Any]]) -> Any:
    node = {"metadata": {"name": "n", "annotations": {
        ANNOTATION_NODE_GPUS: orjson.dumps({"version": 1, "gpus": entries}).decode()}}}
    info = platform.nodes.decode(node)
    assert info.problems == ()
    return info.gpus


def test_whole_gpus_of_two_models_are_described_exactly(platform: Platform) -> None:
    entries, problems = publish(platform.catalog, [
        gpu(1, "NVIDIA H100 80GB HBM3"), gpu(0, "NVIDIA L4", 23034)])
    assert problems == ()
    assert entries == [
        {"index": 0, "uuid": "GPU-0", "type": "l4", "memoryMiB": 23034},
        {"index": 1, "uuid": "GPU-1", "type": "h100-80gb", "memoryMiB": 81920}]
    devices = decoded(platform, entries)
    assert [platform.catalog.id_of(d.type_index) for d in devices] == ["l4", "h100-80gb"]
    assert [d.uuid for d in devices] == ["GPU-0", "GPU-1"]
    assert all(d.healthy and d.mig is None and d.replicas == 0 for d in devices)


def test_mig_mixed_profiles_keep_their_placements(platform: Platform) -> None:
    instances = [{"profile": "3g.40gb", "start": 4, "uuid": "MIG-a"},
                 {"profile": "1g.10gb", "start": 3, "uuid": "MIG-b"},
                 {"profile": "2g.20gb", "start": 0, "uuid": "MIG-c"}]
    entries, _ = publish(platform.catalog, [gpu(0, migEnabled=True, migInstances=instances),
                                            gpu(1, migEnabled=True)])
    # sorted by start; the MIG UUIDs stay with the agent (corrections), not in the schema
    assert entries[0]["mig"] == {"mode": "static", "instances": [
        {"profile": "2g.20gb", "start": 0}, {"profile": "1g.10gb", "start": 3},
        {"profile": "3g.40gb", "start": 4}]}
    devices = decoded(platform, entries)
    assert devices[0].mig == MigLayout(False, (("2g.20gb", 0), ("1g.10gb", 3), ("3g.40gb", 4)))
    assert devices[1].mig == MigLayout(False, ())  # MIG on, no instance created yet


@pytest.mark.parametrize(("sharing", "resource", "shared"), [
    P(Sharing(4, RESOURCE_GPU), RESOURCE_GPU, False, id="replicas as nvidia.com/gpu"),
    P(Sharing(4, RESOURCE_GPU_SHARED), RESOURCE_GPU_SHARED, True, id="renameByDefault"),
])
def test_time_sliced_gpus_carry_their_replicas(platform: Platform, sharing: Sharing,
                                               resource: str, shared: bool) -> None:
    entries, _ = publish(platform.catalog, [gpu(0, "Tesla T4", 15360),
                                            gpu(1, migEnabled=True)], sharing)
    assert entries[0]["replicas"] == 4 and entries[0]["replicaResource"] == resource
    assert "replicas" not in entries[1]  # a MIG GPU is partitioned, not time-sliced
    device = decoded(platform, entries)[0]
    assert (device.replicas, device.replicas_shared) == (4, shared)


@pytest.mark.parametrize(("labels", "expected"), [
    P({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.product": "Tesla-T4"},
      Sharing(4, RESOURCE_GPU), id="GFD time-slicing"),
    P({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.product": "Tesla-T4-SHARED"},
      Sharing(4, RESOURCE_GPU_SHARED), id="GFD renamed (-SHARED product)"),
    P({"nvidia.com/gpu.replicas": "1"}, Sharing(), id="one replica is not shared"),
    P({"nvidia.com/gpu.replicas": "x"}, Sharing(), id="a bad label is ignored"),
    P({}, Sharing(), id="no labels"),
])
def test_sharing_from_gfd_labels(labels: dict[str, str], expected: Sharing) -> None:
    assert Sharing.from_node_labels(labels) == expected


@pytest.mark.parametrize(("extra", "healthy", "reason"), [
    P({"xidErrors": [79]}, False, "XID 79", id="fallen off the bus"),
    P({"xidErrors": [48, 13]}, False, "XID 48", id="double-bit ECC next to an app XID"),
    P({"xidErrors": [13, 31, 43, 45, 68, 109]}, True, "", id="application XIDs only"),
    P({"retiredPagesPending": True}, False, "retired pages pending", id="pages pending"),
    P({"rowRemapFailure": True}, False, "row remap failure", id="row remap failed"),
    P({"lost": True}, False, "GPU lost", id="lost"),
])
def test_unhealthy_gpus_are_published_unhealthy(platform: Platform, extra: dict[str, Any],
                                               healthy: bool, reason: str) -> None:
    entries, problems = publish(platform.catalog, [gpu(0, **extra)])
    assert entries[0].get("healthy", True) is healthy
    assert decoded(platform, entries)[0].healthy is healthy
    assert (reason in problems[0]) if reason else problems == ()


def test_an_unknown_model_is_reported_and_published_as_named(platform: Platform) -> None:
    entries, problems = publish(platform.catalog, [gpu(0, "NVIDIA Quantum QX-9000", 65536)])
    assert entries[0]["type"] == "NVIDIA Quantum QX-9000"
    assert "not in the accelerator catalog" in problems[0]
    node = {"metadata": {"name": "n", "annotations": {ANNOTATION_NODE_GPUS: orjson.dumps(
        {"version": 1, "gpus": entries}).decode()}}}
    info = platform.nodes.decode(node)
    assert info.gpus[0].type_index == platform.catalog.unknown_index  # unrequestable
    assert "unknown GPU type" in info.problems[0]
