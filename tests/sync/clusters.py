"""Small mixed clusters for service and sync tests: whole-GPU, VRAM-share, MIG and
time-sliced nodes, described the way real nodes describe themselves."""

from __future__ import annotations

from typing import Any

from tests.builders import DYNAMIC_MIG, gpu_entry, make_node, make_pod

JSON = dict[str, Any]


def l4_node(name: str, gpus: int = 4) -> JSON:
    return make_node(name).gfd("NVIDIA-L4", count=gpus, memory=23034).allocatable(gpu=gpus).obj()


def t4_node(name: str, gpus: int = 4) -> JSON:
    return make_node(name).gfd("Tesla-T4", count=gpus, memory=15360).allocatable(gpu=gpus).obj()


def mig_node(name: str, gpus: int = 2) -> JSON:
    """A100-80GB with dynamic MIG (the extender places instances), per the node agent."""
    entries = [gpu_entry(i, "a100-80gb", 81920, mig=DYNAMIC_MIG, uuid=f"GPU-{name}-{i}")
               for i in range(gpus)]
    return make_node(name).gpus_annotation(entries).allocatable(gpu=gpus).obj()


def shared_node(name: str, gpus: int = 2, replicas: int = 4) -> JSON:
    return make_node(name).gfd("NVIDIA-A10G", count=gpus, memory=23028, replicas=replicas,
                               sharing="time-slicing").allocatable(shared=gpus * replicas).obj()


def mixed_nodes(per_kind: int = 2) -> list[JSON]:
    nodes = []
    for i in range(per_kind):
        nodes += [l4_node(f"l4-{i}"), t4_node(f"t4-{i}"), mig_node(f"mig-{i}"),
                  shared_node(f"shared-{i}")]
    return nodes


def whole_pod(name: str, count: int = 1, gpu_type: str = "l4") -> JSON:
    return make_pod(name).namespace("ml").gpus(count).accelerator(gpu_type).obj()


def vram_pod(name: str, size: str = "6Gi", gpu_type: str = "t4") -> JSON:
    return make_pod(name).namespace("ml").gpu_memory(size).accelerator(gpu_type).obj()


def mig_pod(name: str, profile: str = "1g.10gb") -> JSON:
    return make_pod(name).namespace("ml").mig(profile).obj()


def replica_pod(name: str, count: int = 1) -> JSON:
    return make_pod(name).namespace("ml").shared_gpus(count).obj()
