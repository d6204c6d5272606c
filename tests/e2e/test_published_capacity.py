"""The share capacity the extender publishes, seen through the API as ``kubectl describe
node`` shows it: equal to ``/debug/inventory``'s totals, and following a GPU going unhealthy
(the node agent's ``gpu-extender.io/gpus`` annotation) and a node losing its GPUs' labels."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from extender.kube.annotations import node_gpus_document
from extender.model import ANNOTATION_NODE_GPUS, RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI
from extender.quantity import parse_quantity
from localcluster import LocalCluster
from tests.builders import gpu_entry
from tests.e2e.gpu_helpers import gpu_cluster

pytestmark = pytest.mark.e2e
MIB = 1 << 20


def published(cluster: LocalCluster, node: str) -> tuple[int, int] | None:
    """(gpu-memory, gpu-milli) in capacity, if both are there and allocatable agrees (the API
    server normalizes quantities: 2000 reads back as 2k)."""
    status = cluster.api().read_node(node).status
    capacity, allocatable = status.capacity or {}, status.allocatable or {}
    pairs = [tuple(part.get(name) for name in (RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI))
             for part in (capacity, allocatable)]
    if None in pairs[0] or pairs[0] != pairs[1]:
        return None
    memory, milli = pairs[0]
    return (int(parse_quantity(memory)), int(parse_quantity(milli)))


def inventory_totals(cluster: LocalCluster, node: str) -> tuple[int, int]:
    """What /debug/inventory says the node offers shares: healthy, unpartitioned GPUs."""
    url = f"{cluster.extender_url}/debug/inventory?node={node}"
    with urllib.request.urlopen(url, timeout=10) as response:
        doc: dict[str, Any] = json.load(response)
    [entry] = doc["nodes"]
    gpus = [g for g in entry["gpus"] if g["healthy"] and g["mig"] is None]
    return (sum(g["totalMiB"] for g in gpus) * MIB, 1000 * len(gpus))


def wait_published(cluster: LocalCluster, node: str, expected: tuple[int, int]) -> None:
    cluster.wait_for(lambda: published(cluster, node) == expected or None, timeout_s=60,
                     description=f"{node} to advertise {expected}")


def test_capacity_equals_the_inventory_and_follows_health(controlplane_binaries: object) -> None:
    gpus = [gpu_entry(0, "t4", 16384), gpu_entry(1, "t4", 16384)]
    with gpu_cluster() as cluster:
        cluster.create_node("t4-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"},
                            annotations={ANNOTATION_NODE_GPUS: node_gpus_document(gpus)})
        cluster.create_node("cpu-0")
        # two T4s: 2 x 16384 MiB = 32 GiB, 2000 milli
        wait_published(cluster, "t4-0", (32 << 30, 2000))
        assert published(cluster, "t4-0") == inventory_totals(cluster, "t4-0")
        # the agent reports GPU 1 unhealthy: it leaves both sums
        sick = [gpus[0], gpu_entry(1, "t4", 16384, healthy=False)]
        cluster.api().patch_node("t4-0", {"metadata": {"annotations": {
            ANNOTATION_NODE_GPUS: node_gpus_document(sick)}}})
        wait_published(cluster, "t4-0", (16 << 30, 1000))
        assert published(cluster, "t4-0") == inventory_totals(cluster, "t4-0")
        # a node without GPUs gets nothing
        capacity = cluster.api().read_node("cpu-0").status.capacity or {}
        assert RESOURCE_GPU_MEMORY not in capacity
