"""DRA objects (``resource.k8s.io/v1``) as a driver and kube-scheduler write them, for unit
tests and e2e (the 1.36.3 API server accepts these shapes: frontier-2026-12 section 1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.kube.decode_dra import DRA_DRIVER, EXTENDED_CLAIM_ANNOTATION

JSON = dict[str, Any]
GPU_CLASS = "gpu.nvidia.com"


def gpu_device(name: str, product: str, uuid: str, memory: str, *,
               counter_set: str | None = None, taint: str | None = None) -> JSON:
    device: JSON = {"name": name,
                    "attributes": {"type": {"string": "gpu"},
                                   "productName": {"string": product},
                                   "uuid": {"string": uuid}},
                    "capacity": {"memory": {"value": memory}}}
    if counter_set is not None:
        device["consumesCounters"] = [{"counterSet": counter_set,
                                       "counters": {"memory": {"value": memory}}}]
    if taint is not None:
        device["taints"] = [{"key": "gpu.nvidia.com/unhealthy", "effect": taint}]
    return device


def mig_device(name: str, product: str, uuid: str, profile: str, memory: str, *,
               counter_set: str | None = None, parent_uuid: str | None = None) -> JSON:
    attributes: JSON = {"type": {"string": "mig"}, "productName": {"string": product},
                        "uuid": {"string": uuid}, "profile": {"string": profile}}
    if parent_uuid is not None:
        attributes["parentUUID"] = {"string": parent_uuid}
    device: JSON = {"name": name, "attributes": attributes,
                    "capacity": {"memory": {"value": memory}}}
    if counter_set is not None:
        device["consumesCounters"] = [{"counterSet": counter_set,
                                       "counters": {"memory": {"value": memory}}}]
    return device


def gpus(node: str, product: str, count: int, memory: str) -> list[JSON]:
    """``count`` full GPUs ``gpu-0..``, UUIDs ``GPU-<node>-<i>``."""
    return [gpu_device(f"gpu-{i}", product, f"GPU-{node}-{i}", memory) for i in range(count)]


def resource_slice(node: str, devices: Sequence[JSON], *, name: str | None = None,
                   generation: int = 1, slice_count: int = 1, pool: str | None = None,
                   driver: str = DRA_DRIVER) -> JSON:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{node}-{driver}"},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": pool or node, "generation": generation,
                              "resourceSliceCount": slice_count},
                     "devices": list(devices)}}


def device_class(name: str = GPU_CLASS, extended: str | None = "nvidia.com/gpu") -> JSON:
    spec: JSON = {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]}
    if extended is not None:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name}, "spec": spec}


def result(node: str, device: str, *, request: str = "container-0-request-0",
           share_id: str | None = None, memory: str | None = None,
           admin: bool = False) -> JSON:
    entry: JSON = {"request": request, "driver": DRA_DRIVER, "pool": node, "device": device}
    if share_id is not None:
        entry["shareID"] = share_id
    if memory is not None:
        entry["consumedCapacity"] = {"memory": memory}
    if admin:
        entry["adminAccess"] = True
    return entry


def claim(name: str, results: Sequence[JSON] = (), *, namespace: str = "default",
          uid: str | None = None, pod_uid: str | None = None, extended: bool = False,
          annotations: Mapping[str, str] = {}) -> JSON:
    metadata: JSON = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}",
                      "annotations": dict(annotations)}
    if extended:
        metadata["annotations"][EXTENDED_CLAIM_ANNOTATION] = "true"
    status: JSON = {}
    if results:
        status["allocation"] = {"devices": {"results": list(results)}}
    if pod_uid is not None:
        status["reservedFor"] = [{"resource": "pods", "name": name, "uid": pod_uid}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata,
            "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
                "deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": 1}}]}},
            "status": status}
