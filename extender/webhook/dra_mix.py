"""Refuse pods that mix a DRA-mapped extended resource with one only the extender accounts for.

kube-scheduler's DynamicResources plugin (``extendeddynamicresources.go``, KEP-5004): once a pod
asks for an extended resource that a DeviceClass maps (``extendedResourceName``) on a node that
does not advertise it, every *other* extended resource of the pod is checked against node
allocatable, and ``ignoredByScheduler`` is never consulted. So ``nvidia.com/gpu: 1`` (DRA-mapped)
with ``nvidia.com/gpumem: 4000`` or ``gpu-extender.io/gpu-memory`` fits no node at all: the pod
would stay Pending forever. Admission says so, and what to write instead.

Which names are DRA-mapped is told to the webhook (``--dra-extended-resource``, repeatable):
it has no API access of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from extender.model import RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI

EXTENDER_ONLY = frozenset({RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI, "nvidia.com/gpumem",
                           "nvidia.com/gpumem-percentage"})
"""Resources no node advertises, accounted by the extender alone (``ignoredByScheduler: true``
in the shipped scheduler config)."""


def _names(pod: Mapping[str, Any]) -> set[str]:
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    names: set[str] = set()
    if not isinstance(spec, Mapping):
        return names
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        for container in containers if isinstance(containers, list) else ():
            resources = container.get("resources") if isinstance(container, Mapping) else None
            for part in ("requests", "limits"):
                amounts = resources.get(part) if isinstance(resources, Mapping) else None
                if isinstance(amounts, Mapping):
                    names.update(str(name) for name in amounts)
    return names


def dra_mix_refusal(pod: Mapping[str, Any], dra_mapped: Iterable[str]) -> str | None:
    """The refusal message, or ``None`` when the pod does not mix the two."""
    names = _names(pod)
    mapped = sorted(names & set(dra_mapped))
    only = sorted(names & EXTENDER_ONLY)
    if not mapped or not only:
        return None
    return (f"gpu-extender: the pod asks {', '.join(mapped)}, which a DeviceClass maps to DRA "
            f"devices (extendedResourceName), together with {', '.join(only)}, which only the "
            "extender accounts for; kube-scheduler then checks the latter against node "
            "allocatable and no node fits. Ask for whole GPUs alone (nvidia.com/gpu: N, "
            "placed on DRA devices) or for a share alone (gpu-extender.io/gpu-memory: 4Gi, "
            "without nvidia.com/gpu, placed on device-plugin GPUs); see docs/dra.md")
