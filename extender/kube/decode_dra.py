"""Dynamic Resource Allocation objects (``resource.k8s.io/v1``) -> small frozen values.

Three kinds are read, each checked for the shape of what is read before anything is decoded
(``ShapeError`` names the field path, the value and what is accepted), and bounded (a
ResourceSlice holds at most ``MAX_DEVICES_PER_SLICE`` devices, as the API server enforces; a
claim at most ``MAX_RESULTS`` results):

- ``ResourceSlice`` -> ``DraSlice``: the devices one driver publishes in one slice of a pool
  (``decode_slice``; slices of other drivers are ``None``);
- ``ResourceClaim`` -> ``DraClaim``: what its allocation holds (``decode_claim``);
- ``DeviceClass`` -> ``DraClass``: the extended resource name it maps (KEP-5004).

``complete_pools`` keeps, per pool, the slices of its highest generation once all
``resourceSliceCount`` of them are in (the pool's publishing rule), and ``node_devices`` turns a
pool's devices into the node's GPUs (productName -> catalog type, uuid, memory) and
``DraDeviceRef``s (MIG devices on the GPU whose counter set they consume). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.catalog import Catalog
from extender.errors import QuantityError
from extender.kube import objects
from extender.kube.shape import ShapeError
from extender.model import DraDeviceRef, GpuDevice
from extender.quantity import quantity_to_mib
from extender.units import MAX_GPU_MEMORY_MIB, MAX_GPUS_PER_NODE

DRA_DRIVER = "gpu.nvidia.com"
"""NVIDIA's DRA driver for GPUs (``dra-driver-nvidia-gpu``)."""
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
"""On the claim kube-scheduler creates for a pod's DRA-backed extended resources."""
MAX_DEVICES_PER_SLICE = 128
"""The API server's own limit (``ResourceSliceMaxDevices``)."""
MAX_RESULTS = 32
"""Allocation results per claim (the API's ``AllocationResultsMaxSize``)."""
MAX_NAME = 253
GPU_KINDS = frozenset({"gpu"})
"""Device ``type`` attributes that are a whole physical GPU; others (``mig``, ``vfio``...)
are parts of one."""
BLOCKING_TAINTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class DraDevice:
    """One device of a slice, as the NVIDIA driver describes it."""

    name: str
    kind: str
    """The ``type`` attribute: ``gpu``, ``mig``... ('' when absent)."""
    product: str
    uuid: str | None
    memory_mib: int
    parent_uuid: str | None = None
    profile: str = ""
    counter_sets: tuple[str, ...] = ()
    """The shared counter sets it consumes: devices consuming one set are one physical GPU."""
    tainted: bool = False
    """A ``NoSchedule``/``NoExecute`` taint: nothing may be placed on it."""


@dataclass(frozen=True)
class DraSlice:
    name: str
    node: str
    pool: str
    generation: int
    slice_count: int
    devices: tuple[DraDevice, ...]


@dataclass(frozen=True)
class DraResult:
    """One ``status.allocation.devices.results[]`` entry."""

    request: str
    driver: str
    pool: str
    device: str
    share_id: str = ""
    consumed_mib: int = 0
    """``consumedCapacity.memory`` of a shared device (0: the whole device)."""
    admin_access: bool = False
    """Monitoring access: holds nothing."""


@dataclass(frozen=True)
class DraClaim:
    namespace: str
    name: str
    uid: str
    results: tuple[DraResult, ...]
    reserved_for: tuple[str, ...] = ()
    """UIDs of the pods the claim is reserved for."""
    extended: bool = False
    """Created by kube-scheduler for a pod's extended resources (KEP-5004)."""

    @property
    def allocated(self) -> bool:
        return bool(self.results)


@dataclass(frozen=True)
class DraClass:
    name: str
    extended_resource: str
    """``spec.extendedResourceName`` ('' when the class maps none)."""


# -- shape helpers ------------------------------------------------------------------------------

def _get(doc: Mapping[str, Any], key: str, path: str, kind: type, accepted: str, *,
         default: Any = None) -> Any:
    value = doc.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ShapeError(f"{path}.{key}" if path else key, value, accepted)
    return value


def _obj(doc: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    value: dict[str, Any] = _get(doc, key, path, dict, "an object", default={})
    return value


def _list(doc: Mapping[str, Any], key: str, path: str, limit: int) -> list[Any]:
    value: list[Any] = _get(doc, key, path, list, "a list", default=[])
    if len(value) > limit:
        raise ShapeError(f"{path}.{key}", f"<{len(value)} entries>",
                            f"a list of at most {limit} entries")
    return value


def _str(doc: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value: str = _get(doc, key, path, str, "a string", default=default)
    if len(value) > MAX_NAME:
        raise ShapeError(f"{path}.{key}", value[:40] + "...",
                            f"a string of at most {MAX_NAME} characters")
    return value


def _entries(value: list[Any], path: str) -> Iterable[tuple[str, dict[str, Any]]]:
    for i, entry in enumerate(value):
        where = f"{path}[{i}]"
        if not isinstance(entry, dict):
            raise ShapeError(where, entry, "an object")
        yield where, entry


def _memory_mib(text: object, path: str) -> int:
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ShapeError(path, text, "a quantity string such as \"15Gi\"")
    try:
        mib = quantity_to_mib(text)
    except QuantityError as exc:
        raise ShapeError(path, text, "a quantity string such as \"15Gi\"") from exc
    if not 0 <= mib <= MAX_GPU_MEMORY_MIB:
        raise ShapeError(path, text, f"a memory of 0..{MAX_GPU_MEMORY_MIB} MiB")
    return mib


# -- ResourceSlice ------------------------------------------------------------------------------

def decode_slice(obj: Mapping[str, Any], driver: str = DRA_DRIVER) -> DraSlice | None:
    """A ResourceSlice of ``driver``; ``None`` for another driver's or a slice with no node
    (network-attached pools are not node GPUs). Raises ``ShapeError``."""
    if not isinstance(obj, dict):
        raise ShapeError("ResourceSlice", obj, "an object")
    spec = _obj(obj, "spec", "")
    if _str(spec, "driver", "spec") != driver:
        return None
    node = _str(spec, "nodeName", "spec")
    if not node:
        return None
    pool = _obj(spec, "pool", "spec")
    generation: int = _get(pool, "generation", "spec.pool", int, "an integer", default=0)
    count: int = _get(pool, "resourceSliceCount", "spec.pool", int, "an integer",
                        default=1)
    if not 1 <= count <= MAX_DEVICES_PER_SLICE:
        raise ShapeError("spec.pool.resourceSliceCount", count,
                            f"an integer in 1..{MAX_DEVICES_PER_SLICE}")
    devices = tuple(_device(entry, where) for where, entry in _entries(
        _list(spec, "devices", "spec", MAX_DEVICES_PER_SLICE), "spec.devices"))
    return DraSlice(objects.name(obj), node, _str(pool, "name", "spec.pool") or node,
                    generation, count, devices)


def _attribute(attributes: Mapping[str, Any], name: str, path: str) -> str | None:
    """A string attribute, named plainly or with the driver's domain."""
    for key in (name, f"{DRA_DRIVER}/{name}"):
        value = attributes.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ShapeError(f"{path}.attributes[{key}]", value, "an object")
        text = value.get("string")
        if text is None:
            text = value.get("version")
        if text is None and isinstance(value.get("int"), int):
            text = str(value["int"])
        if text is not None and not isinstance(text, str):
            raise ShapeError(f"{path}.attributes[{key}].string", text, "a string")
        return text[:MAX_NAME] if text is not None else None
    return None


def _device(entry: Mapping[str, Any], path: str) -> DraDevice:
    name = _str(entry, "name", path)
    if not name:
        raise ShapeError(f"{path}.name", None, "a device name")
    attributes = _obj(entry, "attributes", path)
    capacity = _obj(entry, "capacity", path)
    memory = 0
    if "memory" in capacity:
        value = capacity["memory"]
        if not isinstance(value, dict):
            raise ShapeError(f"{path}.capacity.memory", value, "an object with a value")
        memory = _memory_mib(value.get("value"), f"{path}.capacity.memory.value")
    counters = tuple(_str(c, "counterSet", where) for where, c in _entries(
        _list(entry, "consumesCounters", path, 8), f"{path}.consumesCounters"))
    tainted = any(_str(t, "effect", where) in BLOCKING_TAINTS for where, t in _entries(
        _list(entry, "taints", path, 16), f"{path}.taints"))
    return DraDevice(
        name=name,
        kind=_attribute(attributes, "type", path) or "",
        product=_attribute(attributes, "productName", path) or "",
        uuid=_attribute(attributes, "uuid", path),
        memory_mib=memory,
        parent_uuid=_attribute(attributes, "parentUUID", path),
        profile=_attribute(attributes, "profile", path) or "",
        counter_sets=counters,
        tainted=tainted,
    )


def complete_pools(slices: Iterable[DraSlice]) -> dict[str, tuple[str, tuple[DraDevice, ...]]]:
    """Pool name -> (node, devices) of the pool's highest generation, for pools whose
    slices of that generation are all in (``resourceSliceCount``); an incomplete newest
    generation leaves the pool out (the driver is still publishing it: its devices are not
    yet known, and the older generation is stale)."""
    by_pool: dict[str, list[DraSlice]] = {}
    for item in slices:
        by_pool.setdefault(item.pool, []).append(item)
    out = {}
    for pool, members in by_pool.items():
        newest = max(s.generation for s in members)
        current = sorted((s for s in members if s.generation == newest), key=lambda s: s.name)
        if len(current) < current[0].slice_count:
            continue
        devices = tuple(d for s in current for d in s.devices)
        out[pool] = (current[0].node, devices)
    return out


def node_devices(devices: Iterable[DraDevice], catalog: Catalog
                 ) -> tuple[tuple[GpuDevice, ...], tuple[DraDeviceRef, ...], list[str]]:
    """A pool's devices as the node's GPUs (full ``gpu`` devices, in name order, numbered
    0..), every device as a ``DraDeviceRef`` on its GPU, and problems. A MIG or partition
    device belongs to the GPU that consumes the same counter set, else to the GPU whose uuid
    is its ``parentUUID``; one with neither is left out (said in the problems)."""
    devices = list(devices)
    whole = sorted((d for d in devices if d.kind in GPU_KINDS), key=lambda d: _natural(d.name))
    problems: list[str] = []
    if len(whole) > MAX_GPUS_PER_NODE:
        problems.append(f"DRA pool: {len(whole)} GPUs published; at most {MAX_GPUS_PER_NODE} "
                        "per node are modelled, the rest are ignored")
        whole = whole[:MAX_GPUS_PER_NODE]
    gpus: list[GpuDevice] = []
    refs: list[DraDeviceRef] = []
    by_counter: dict[str, int] = {}
    by_uuid: dict[str, int] = {}
    for index, device in enumerate(whole):
        memory = device.memory_mib or None
        type_index = catalog.resolve_node_type(device.product, memory)
        if type_index is None:
            problems.append(f"DRA device {device.name}: productName {device.product!r} is not "
                            "in the accelerator catalog (add it under `accelerators` with this "
                            "name in `aliases`)")
            type_index = catalog.unknown_index
        if memory is None:
            memory = int(catalog.memory_mib[type_index])
        gpus.append(GpuDevice(index=index, type_index=type_index, memory_mib=memory,
                              uuid=device.uuid, healthy=not device.tainted,
                              dra_device=device.name))
        refs.append(DraDeviceRef(device.name, index, device.kind, memory, device.uuid))
        for counter in device.counter_sets:
            by_counter.setdefault(counter, index)
        if device.uuid:
            by_uuid[device.uuid] = index
    for device in sorted(devices, key=lambda d: _natural(d.name)):
        if device.kind in GPU_KINDS:
            continue
        parent = next((by_counter[c] for c in device.counter_sets if c in by_counter), None)
        if parent is None and device.parent_uuid:
            parent = by_uuid.get(device.parent_uuid)
        if parent is None:
            problems.append(f"DRA device {device.name} ({device.kind or 'no type'}): no GPU of "
                            "the pool shares its counter set or is its parentUUID; ignored")
            continue
        refs.append(DraDeviceRef(device.name, parent, device.kind,
                                 device.memory_mib or gpus[parent].memory_mib, device.uuid,
                                 device.profile))
    return tuple(gpus), tuple(refs), problems


def _natural(name: str) -> tuple[str, int, str]:
    """``gpu-2`` before ``gpu-10``."""
    stem = name.rstrip("0123456789")
    digits = name[len(stem):]
    return (stem, int(digits) if digits and len(digits) < 10 else -1, name)


# -- ResourceClaim ------------------------------------------------------------------------------

def decode_claim(obj: Mapping[str, Any], driver: str = DRA_DRIVER) -> DraClaim:
    """A claim and the results of ``driver`` in its allocation (none while unallocated).
    Raises ``ShapeError``."""
    if not isinstance(obj, dict):
        raise ShapeError("ResourceClaim", obj, "an object")
    status = _obj(obj, "status", "")
    allocation = _obj(status, "allocation", "status")
    devices = _obj(allocation, "devices", "status.allocation")
    results = []
    for where, entry in _entries(_list(devices, "results", "status.allocation.devices",
                                       MAX_RESULTS), "status.allocation.devices.results"):
        if _str(entry, "driver", where) != driver:
            continue
        consumed = _obj(entry, "consumedCapacity", where)
        memory = _memory_mib(consumed["memory"], f"{where}.consumedCapacity.memory") \
            if consumed.get("memory") is not None else 0
        admin: bool = _get(entry, "adminAccess", where, bool, "true or false",
                           default=False)
        results.append(DraResult(
            request=_str(entry, "request", where), driver=driver,
            pool=_str(entry, "pool", where), device=_str(entry, "device", where),
            share_id=_str(entry, "shareID", where), consumed_mib=memory, admin_access=admin))
    reserved = tuple(_str(entry, "uid", where) for where, entry in _entries(
        _list(status, "reservedFor", "status", 256), "status.reservedFor")
        if _str(entry, "resource", where) == "pods")
    annotations = objects.annotations(obj)
    return DraClaim(objects.namespace(obj), objects.name(obj), objects.uid(obj),
                    tuple(results), reserved,
                    annotations.get(EXTENDED_CLAIM_ANNOTATION) == "true")


def extended_claim_name(pod: Mapping[str, Any]) -> str:
    """The claim kube-scheduler made for the pod's DRA-backed extended resources
    (``status.extendedResourceClaimStatus.resourceClaimName``; '' when none)."""
    status = pod.get("status") if isinstance(pod, dict) else None
    claim = status.get("extendedResourceClaimStatus") if isinstance(status, dict) else None
    name = claim.get("resourceClaimName") if isinstance(claim, dict) else None
    return name if isinstance(name, str) and len(name) <= MAX_NAME else ""


# -- DeviceClass --------------------------------------------------------------------------------

def decode_device_class(obj: Mapping[str, Any]) -> DraClass:
    if not isinstance(obj, dict):
        raise ShapeError("DeviceClass", obj, "an object")
    spec = _obj(obj, "spec", "")
    return DraClass(objects.name(obj), _str(spec, "extendedResourceName", "spec"))
