"""NVML snapshot -> the ``gpu-extender.io/gpus`` document, in the schema the extender's
``NodeDecoder`` reads (``extender.kube.annotations.node_gpus_document`` encodes it; this module
only builds the entries).

The product name is mapped to a catalog id the way GFD spells it in ``nvidia.com/gpu.product``
(spaces become dashes); a name the catalog does not know is published as it is, so the extender
reports it (and keeps the GPU unrequestable) instead of the agent guessing a type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.agent.health import health_problems
from extender.agent.nvml import GpuState, NvmlSnapshot
from extender.catalog import Catalog
from extender.kube.annotations import node_gpus_document
from extender.model import RESOURCE_GPU, RESOURCE_GPU_SHARED

LABEL_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_SHARING = "nvidia.com/gpu.sharing-strategy"
LABEL_PRODUCT_SHARED_SUFFIX = "-SHARED"
"""GFD appends ``-SHARED`` to the product label when time-slicing renames the resource."""


@dataclass(frozen=True)
class Sharing:
    """Time-slicing as the device plugin is configured on this node (GFD labels or the agent
    config): ``replicas`` per GPU (0: not shared), advertised as ``resource``."""

    replicas: int = 0
    resource: str = RESOURCE_GPU

    @classmethod
    def from_node_labels(cls, labels: Mapping[str, str]) -> Sharing:
        try:
            replicas = int(labels.get(LABEL_REPLICAS, "0"))
        except ValueError:
            replicas = 0
        if replicas <= 1 or labels.get(LABEL_SHARING, "time-slicing") == "none":
            return cls()
        product = labels.get("nvidia.com/gpu.product", "")
        renamed = product.endswith(LABEL_PRODUCT_SHARED_SUFFIX)
        return cls(replicas, RESOURCE_GPU_SHARED if renamed else RESOURCE_GPU)


@dataclass(frozen=True)
class Inventory:
    entries: tuple[dict[str, Any], ...]
    problems: tuple[str, ...]
    unhealthy: Mapping[str, tuple[str, ...]]
    """GPU UUID -> why it is unhealthy."""

    def document(self) -> str:
        return node_gpus_document(list(self.entries))


def catalog_type(catalog: Catalog, gpu: GpuState) -> str | None:
    """The catalog id of an NVML product name, or ``None`` when the catalog does not know it."""
    index = catalog.resolve_node_type(gpu.name.strip().replace(" ", "-"), gpu.memory_total_mib)
    if index is None or index == catalog.unknown_index:
        return None
    return catalog.id_of(index)


def duplicate_uuids(snapshot: NvmlSnapshot) -> set[str]:
    """UUIDs NVML reports for more than one GPU or MIG instance (a broken driver or a bad
    fixture): they name no single device, so no pod may be given one by UUID."""
    seen: set[str] = set()
    twice: set[str] = set()
    for gpu in snapshot.gpus:
        for uuid in (gpu.uuid, *(inst.uuid for inst in gpu.mig_instances)):
            (twice if uuid in seen else seen).add(uuid)
    return twice


def build_inventory(snapshot: NvmlSnapshot, catalog: Catalog, sharing: Sharing) -> Inventory:
    """The entries to publish. A GPU whose UUID (or one of whose MIG UUIDs) is duplicated is
    published unhealthy and without its UUID, and reported."""
    entries = []
    problems = []
    unhealthy = {}
    twice = duplicate_uuids(snapshot)
    for gpu in sorted(snapshot.gpus, key=lambda g: g.index):
        type_id = catalog_type(catalog, gpu)
        if type_id is None:
            problems.append(f"GPU {gpu.index} ({gpu.uuid}): NVML name {gpu.name!r} is not in "
                            "the accelerator catalog; published as is (unrequestable)")
        entry: dict[str, Any] = {"index": gpu.index, "uuid": gpu.uuid,
                                 "type": type_id or gpu.name or "unknown",
                                 "memoryMiB": gpu.memory_total_mib}
        if gpu.mig_enabled:
            entry["mig"] = {"mode": "static", "instances": [
                {"profile": inst.profile, "start": inst.start}
                for inst in sorted(gpu.mig_instances, key=lambda i: i.start)]}
        elif sharing.replicas > 1:
            entry["replicas"] = sharing.replicas
            entry["replicaResource"] = sharing.resource
        reasons = health_problems(gpu)
        shared = sorted({gpu.uuid, *(i.uuid for i in gpu.mig_instances)} & twice)
        if shared:
            del entry["uuid"]
            reasons = (*reasons, f"UUID {', '.join(shared)} reported for more than one device")
        if reasons:
            entry["healthy"] = False
            unhealthy[gpu.uuid] = reasons
            problems.append(f"GPU {gpu.index} ({gpu.uuid}) unhealthy: {'; '.join(reasons)}")
        entries.append(entry)
    return Inventory(tuple(entries), tuple(problems), unhealthy)
