"""The kubelet's answer (PodResources) against our assignment: where the device manager gave a
container other devices than the extender chose, the truth, as a corrected assignment.

Only device-plugin resources can differ: whole GPUs and time-slice replicas
(``nvidia.com/gpu``, ``nvidia.com/gpu.shared``, device IDs ``GPU-uuid`` or ``GPU-uuid::n``) and
MIG instances (``nvidia.com/mig-*``, MIG UUIDs). VRAM and fraction shares are extender-only
resources that the kubelet does not allocate; their device is the one in ``visible-devices``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from extender.agent.devices import DeviceMap
from extender.agent.kubelet import KubeletPod
from extender.agent.pods import NodePod
from extender.model import RESOURCE_GPU, RESOURCE_MIG_PREFIX, Assignment, GpuGrant


@dataclass(frozen=True)
class Correction:
    pod: NodePod
    assignment: Assignment
    """The assignment as the kubelet made it (to publish as ``assigned-observed``)."""
    summary: str


def _devices_of(grants: tuple[GpuGrant, ...]) -> list[tuple[int, int]]:
    return sorted((g.index, g.mig_start if g.mig_profile else -1) for g in grants)


def truth(pod: NodePod, kubelet: KubeletPod, devices: DeviceMap
          ) -> tuple[tuple[GpuGrant, ...] | None, list[str]]:
    """The grants the kubelet's device IDs stand for (``None``: nothing to compare) and what
    could not be understood."""
    assigned = pod.assigned
    if assigned is None or not assigned.grants:
        return None, []
    template = assigned.grants[0]
    problems: list[str] = []
    grants: list[GpuGrant] = []
    if template.mig_profile is not None:
        for device_id in kubelet.device_ids(RESOURCE_MIG_PREFIX):
            device = devices.by_uuid.get(device_id)
            if device is None or device.mig_profile is None:
                problems.append(f"kubelet device {device_id!r} is no MIG instance NVML knows")
                continue
            grants.append(replace(template, index=device.gpu_index, uuid=device.gpu_uuid,
                                  mig_profile=device.mig_profile, mig_start=device.mig_start))
    elif template.whole or template.replica:
        seen: set[str] = set()
        for device_id in kubelet.device_ids(RESOURCE_GPU):
            uuid = devices.base_uuid(device_id)
            device = devices.by_uuid.get(uuid)
            if device is None or device.mig_profile is not None:
                problems.append(f"kubelet device {device_id!r} is no GPU NVML knows")
                continue
            if uuid in seen:
                continue
            seen.add(uuid)
            vram = device.memory_mib if template.whole else template.vram_mib
            grants.append(replace(template, index=device.gpu_index, uuid=uuid, vram_mib=vram))
    else:
        return None, []
    if not grants or problems:
        return None, problems
    return tuple(grants), problems


def correction(pod: NodePod, kubelet: KubeletPod, devices: DeviceMap
               ) -> tuple[Correction | None, list[str]]:
    grants, problems = truth(pod, kubelet, devices)
    if grants is None or pod.assigned is None:
        return None, problems
    held = pod.assignment
    assert held is not None
    if _devices_of(grants) == _devices_of(held.grants):
        return None, problems
    corrected = replace(pod.assigned, grants=grants)
    chosen = ", ".join(_describe(g) for g in pod.assigned.grants)
    given = ", ".join(_describe(g) for g in grants)
    return Correction(pod, corrected, f"the extender chose {chosen}; the kubelet gave {given}"
                      ), problems


def _describe(grant: GpuGrant) -> str:
    name = f"GPU {grant.index}" + (f" ({grant.uuid})" if grant.uuid else "")
    if grant.mig_profile:
        name += f" MIG {grant.mig_profile}@{grant.mig_start}"
    return name
