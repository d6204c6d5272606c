"""The node's devices by UUID, as NVML reports them: GPU UUIDs and MIG UUIDs -> where they are.
Shared by usage (which device a process runs on) and corrections (which device the kubelet
named)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from extender.agent.nvml import GpuProcess, NvmlSnapshot
from extender.model import GpuGrant


@dataclass(frozen=True)
class Device:
    uuid: str
    gpu_index: int
    gpu_uuid: str
    model: str
    memory_mib: int
    mig_profile: str | None = None
    mig_start: int = -1
    processes: tuple[GpuProcess, ...] = ()


class DeviceMap:
    def __init__(self, snapshot: NvmlSnapshot) -> None:
        self.by_uuid: dict[str, Device] = {}
        self._by_index: dict[int, Device] = {}
        self._mig: dict[tuple[int, int], Device] = {}
        for gpu in snapshot.gpus:
            whole = Device(gpu.uuid, gpu.index, gpu.uuid, gpu.name, gpu.memory_total_mib,
                           processes=gpu.processes)
            self.by_uuid[gpu.uuid] = whole
            self._by_index[gpu.index] = whole
            for inst in gpu.mig_instances:
                device = Device(inst.uuid, gpu.index, gpu.uuid, gpu.name, gpu.memory_total_mib,
                                mig_profile=inst.profile, mig_start=inst.start,
                                processes=inst.processes)
                self.by_uuid[inst.uuid] = device
                self._mig[(gpu.index, inst.start)] = device

    def __iter__(self) -> Iterator[Device]:
        return iter(self.by_uuid.values())

    def gpu(self, index: int) -> Device | None:
        return self._by_index.get(index)

    def of_grant(self, grant: GpuGrant) -> Device | None:
        """The device a grant names: its MIG instance, else its GPU (by UUID when the grant
        has one NVML knows, else by index)."""
        if grant.mig_profile is not None:
            return self._mig.get((grant.index, grant.mig_start))
        if grant.uuid and grant.uuid in self.by_uuid:
            return self.by_uuid[grant.uuid]
        return self._by_index.get(grant.index)

    @staticmethod
    def base_uuid(device_id: str) -> str:
        """``GPU-x::3`` (a time-slice replica the device plugin names) -> ``GPU-x``."""
        return device_id.split("::", 1)[0]
