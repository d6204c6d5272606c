"""The real NVML backend (``pynvml`` from ``nvidia-ml-py``).

Per GPU: index, UUID, name, memory, MIG mode and each GPU instance (profile, placement start, MIG
UUID), running compute processes (per GPU and per MIG instance), and health: XID events (an
event set polled without blocking on every snapshot), retired pages pending, row remap failures,
and ``GPU_IS_LOST``. Only this module imports pynvml. Not exercised in CI (no GPU): see
hack/gpu-check.sh for the check on a real GPU.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from extender.agent.errors import AgentError
from extender.agent.nvml import GpuProcess, GpuState, MigInstanceState, NvmlSnapshot

log = logging.getLogger(__name__)

_MIB = 1 << 20
_MIG_PROFILE = re.compile(r"(\d+g\.\d+gb(?:\+me)?)")


class PynvmlBackend:
    def __init__(self) -> None:
        try:
            import pynvml
        except ImportError as exc:  # pragma: no cover - a dependency of the package
            raise AgentError("pynvml is not installed (pip install nvidia-ml-py)") from exc
        self._nvml: Any = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise AgentError(f"NVML could not start ({exc}); is the NVIDIA driver loaded and "
                             "the container run with the nvidia runtime? Use --nvml-fixture "
                             "on machines without a GPU") from exc
        self._xids: dict[int, list[int]] = {}
        self._events: Any = None
        self._handles: dict[int, Any] = {}
        self._watch_xids()

    def _watch_xids(self) -> None:
        nvml = self._nvml
        try:
            self._events = nvml.nvmlEventSetCreate()
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                self._handles[index] = handle
                try:
                    nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError,
                                                  self._events)
                except nvml.NVMLError as exc:  # e.g. not supported on this board
                    log.warning("GPU %d: XID events unavailable (%s)", index, exc)
        except nvml.NVMLError as exc:
            log.warning("XID events unavailable (%s)", exc)
            self._events = None

    def _drain_xids(self) -> None:
        nvml = self._nvml
        if self._events is None:
            return
        while True:
            try:
                data = nvml.nvmlEventSetWait_v2(self._events, 0)
            except nvml.NVMLError_Timeout:
                return
            except nvml.NVMLError as exc:
                log.warning("reading XID events failed (%s)", exc)
                return
            try:  # handles are fresh ctypes objects: ask NVML which GPU this is
                index = int(nvml.nvmlDeviceGetIndex(data.device))
            except nvml.NVMLError:
                continue
            self._xids.setdefault(index, []).append(int(data.eventData))

    def snapshot(self) -> NvmlSnapshot:
        nvml = self._nvml
        try:
            driver = _text(nvml.nvmlSystemGetDriverVersion())
            count = int(nvml.nvmlDeviceGetCount())
        except nvml.NVMLError as exc:
            raise AgentError(f"NVML: cannot list GPUs ({exc})") from exc
        self._drain_xids()
        return NvmlSnapshot(driver_version=driver,
                            gpus=tuple(self._gpu(index) for index in range(count)))

    def _gpu(self, index: int) -> GpuState:
        nvml = self._nvml
        xids = tuple(self._xids.get(index, ()))
        try:
            handle = self._handles.get(index) or nvml.nvmlDeviceGetHandleByIndex(index)
            uuid = _text(nvml.nvmlDeviceGetUUID(handle))
            name = _text(nvml.nvmlDeviceGetName(handle))
            total = int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // _MIB
        except nvml.NVMLError as exc:
            log.error("GPU %d is lost (%s)", index, exc)
            return GpuState(index=index, uuid=f"unknown-{index}", name="", memory_total_mib=1,
                            xid_errors=xids, lost=True)
        try:
            mig_enabled = nvml.nvmlDeviceGetMigMode(handle)[0] == nvml.NVML_DEVICE_MIG_ENABLE
        except nvml.NVMLError:  # not MIG capable
            mig_enabled = False
        lost = False
        try:
            processes = _processes(nvml, handle)
        except nvml.NVMLError_GpuIsLost:
            processes, lost = (), True
        instances = self._mig_instances(handle) if mig_enabled else ()
        return GpuState(index=index, uuid=uuid, name=name, memory_total_mib=total,
                        mig_enabled=mig_enabled, mig_instances=instances,
                        processes=processes, xid_errors=xids,
                        retired_pages_pending=self._pages_pending(handle),
                        row_remap_failure=self._remap_failed(handle), lost=lost)

    def _mig_instances(self, handle: Any) -> tuple[MigInstanceState, ...]:
        nvml = self._nvml
        out = []
        for slot in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except nvml.NVMLError:  # no instance in this slot
                continue
            try:
                name = _text(nvml.nvmlDeviceGetName(mig))
                match = _MIG_PROFILE.search(name)
                gi_id = nvml.nvmlDeviceGetGpuInstanceId(mig)
                gpu_instance = nvml.nvmlDeviceGetGpuInstanceById(handle, gi_id)
                start = int(nvml.nvmlGpuInstanceGetInfo(gpu_instance).placement.start)
                out.append(MigInstanceState(
                    profile=match.group(1) if match else name, start=start,
                    uuid=_text(nvml.nvmlDeviceGetUUID(mig)),
                    processes=_processes(nvml, mig)))
            except nvml.NVMLError as exc:
                log.warning("MIG device %d: %s", slot, exc)
        return tuple(out)

    def _pages_pending(self, handle: Any) -> bool:
        nvml = self._nvml
        try:
            status = nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle)
        except nvml.NVMLError:  # not supported (row-remapping GPUs)
            return False
        return bool(status == nvml.NVML_FEATURE_ENABLED)

    def _remap_failed(self, handle: Any) -> bool:
        nvml = self._nvml
        try:
            _corr, _unc, _pending, failed = nvml.nvmlDeviceGetRemappedRows(handle)
        except nvml.NVMLError:  # not supported before Ampere
            return False
        return bool(failed)

    def close(self) -> None:
        nvml = self._nvml
        try:
            if self._events is not None:
                nvml.nvmlEventSetFree(self._events)
            nvml.nvmlShutdown()
        except nvml.NVMLError as exc:
            log.warning("NVML shutdown: %s", exc)


def _processes(nvml: Any, handle: Any) -> tuple[GpuProcess, ...]:
    out = []
    for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
        used = proc.usedGpuMemory
        # None (NVML_VALUE_NOT_AVAILABLE) without permission to read other processes' usage.
        out.append(GpuProcess(pid=int(proc.pid), used_mib=int(used or 0) // _MIB))
    return tuple(out)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
