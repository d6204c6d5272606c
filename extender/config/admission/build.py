"""Defaulted, validated raw ``admission:`` tree -> typed ``AdmissionConfig``."""

from __future__ import annotations

from typing import Any

from extender.config.admission.types import (
    AdmissionConfig,
    GpuTypeMapping,
    PartitionConfig,
    PlatformMappingConfig,
    RuntimeClassConfig,
    SchedulerNameConfig,
    VisibleDevicesConfig,
)


def build_admission(raw: dict[str, Any]) -> AdmissionConfig:
    scheduler = raw["schedulerName"]
    mapping = raw["platformMapping"]
    partitions = mapping["partitions"]
    devices = raw["visibleDevices"]
    runtime = raw["runtimeClass"]
    return AdmissionConfig(
        warnings=bool(raw["warnings"]),
        workloads=str(raw["workloads"]),
        scheduler_name=SchedulerNameConfig(enabled=bool(scheduler["enabled"]),
                                           name=str(scheduler["name"])),
        platform_mapping=PlatformMappingConfig(
            enabled=bool(mapping["enabled"]),
            type_label=mapping["typeLabel"],
            gpu_types=tuple(
                GpuTypeMapping(name=entry["name"],
                               node_selector=dict(entry.get("nodeSelector") or {}),
                               tolerations=tuple(dict(t) for t in entry.get("tolerations") or ()))
                for entry in mapping["gpuTypes"]),
            partitions=PartitionConfig(enabled=bool(partitions["enabled"]),
                                       label=partitions["label"],
                                       tolerate=bool(partitions["tolerate"])),
        ),
        visible_devices=VisibleDevicesConfig(enabled=bool(devices["enabled"]),
                                             env=str(devices["env"]),
                                             kinds=tuple(devices["kinds"])),
        runtime_class=RuntimeClassConfig(enabled=bool(runtime["enabled"]),
                                         name=str(runtime["name"])),
    )
