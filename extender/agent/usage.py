"""What each pod really uses on each device, against what it declared.

Processes come from NVML per GPU and per MIG instance; each PID is mapped to its pod and
container through cgroups. A pod's declared VRAM on a device is what its assignment holds there
(a whole GPU or MIG instance holds all of it, a share its MiB). A pod that uses a device it was
not given declared 0 there, and so did a pod that asks for no GPU at all (one that sets
``NVIDIA_VISIBLE_DEVICES=all`` itself): any use it makes is overuse. GPU pods the extender did
not place have no declaration (``None``): their usage is reported, never called overuse.
Processes outside any pod are not attributed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.agent.cgroup import PidMapper
from extender.agent.devices import Device, DeviceMap
from extender.agent.pods import NodePod


@dataclass(frozen=True)
class Usage:
    namespace: str
    pod: str
    pod_uid: str
    container: str
    uuid: str
    used_mib: int
    declared_mib: int | None
    device: Device

    @property
    def key(self) -> tuple[str, str]:
        """(pod UID, device UUID): what an overuse episode is about."""
        return (self.pod_uid, self.uuid)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"namespace": self.namespace, "pod": self.pod,
                               "container": self.container, "uuid": self.uuid,
                               "usedMiB": self.used_mib, "declaredMiB": self.declared_mib,
                               "gpu": self.device.gpu_index}
        if self.device.mig_profile:
            out["migProfile"] = self.device.mig_profile
        return out


def declared_by_device(pod: NodePod, devices: DeviceMap) -> dict[str, int] | None:
    assignment = pod.assignment
    if assignment is None:
        return None if pod.requests_gpu else {}
    out: dict[str, int] = defaultdict(int)
    for grant in assignment.grants:
        device = devices.of_grant(grant)
        if device is not None:
            out[device.uuid] += grant.vram_mib
    return dict(out)


def measure(devices: DeviceMap, pods: Mapping[str, NodePod], mapper: PidMapper) -> list[Usage]:
    """One entry per (pod, container, device) with a running process, sorted for stable
    output."""
    used: dict[tuple[str, str, str], int] = defaultdict(int)
    for device in devices:
        for proc in device.processes:
            ref = mapper.container_of(proc.pid)
            if ref is None or ref.pod_uid not in pods:
                continue
            pod = pods[ref.pod_uid]
            container = pod.containers.get(ref.container_id)
            if container is None:  # status not updated yet: a one-container pod is unambiguous
                container = (pod.container_names[0] if len(pod.container_names) == 1
                             else ref.container_id[:12])
            used[(ref.pod_uid, container, device.uuid)] += proc.used_mib
    out = []
    for (uid, container, uuid), mib in used.items():
        pod = pods[uid]
        declared = declared_by_device(pod, devices)
        out.append(Usage(pod.key.namespace, pod.key.name, uid, container, uuid, mib,
                         None if declared is None else declared.get(uuid, 0),
                         devices.by_uuid[uuid]))
    return sorted(out, key=lambda u: (u.namespace, u.pod, u.container, u.uuid))


Overuse = Usage
"""An overuse is a usage entry for a whole pod on one device: ``used_mib`` summed over its
containers, ``container`` the one using the most, ``declared_mib`` never ``None``."""


def overuses(usage: list[Usage], tolerance_mib: int = 0) -> list[Overuse]:
    """Pods whose summed use of a device exceeds their declaration by more than
    ``tolerance_mib``; undeclared pods (``None``) are never overusing."""
    per_pod: dict[tuple[str, str], list[Usage]] = defaultdict(list)
    for entry in usage:
        if entry.declared_mib is not None:
            per_pod[(entry.pod_uid, entry.uuid)].append(entry)
    out = []
    for entries in per_pod.values():
        total = sum(e.used_mib for e in entries)
        declared = entries[0].declared_mib or 0
        if total > declared + tolerance_mib:
            top = max(entries, key=lambda e: (e.used_mib, e.container))
            out.append(replace(top, used_mib=total, declared_mib=declared))
    return sorted(out, key=lambda o: (o.namespace, o.pod, o.uuid))
