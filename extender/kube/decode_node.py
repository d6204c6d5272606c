"""Node JSON -> ``NodeInfo``: one ``GpuDevice`` per physical GPU.

Sources, strongest first: the ``gpu-extender.io/gpus`` annotation (published by the node agent:
exact per-GPU type, memory, MIG layout, replicas, health), then type labels (GFD, GKE, Karpenter,
AKS or a custom mapping) with ``status.allocatable``. Nothing here raises on bad input: what
cannot be understood becomes a ``problems`` entry and the GPUs it concerns are left out or typed
``unknown`` (protected, unrequestable), so a malformed node never crashes the watch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.catalog import Catalog
from extender.catalog.types import MigProfile
from extender.config.presets import GFD, gfd_mig_profile
from extender.errors import QuantityError
from extender.jsonobj import load_object
from extender.kube import mig_layout, objects
from extender.kube.labels import LabelMapper, NodeTypeLabel
from extender.model import (
    ANNOTATION_NODE_GPUS,
    NODE_GPUS_VERSION,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
    RESOURCE_MIG_PREFIX,
    GpuDevice,
    MigLayout,
    NodeInfo,
)
from extender.quantity import (
    lenient_quantity,
    parse_quantity,
    quantity_to_mib,
    quantity_to_milli,
)
from extender.units import (
    MAX_GPU_INDEX,
    MAX_GPU_MEMORY_MIB,
    MAX_GPUS_PER_NODE,
    MAX_REPLICAS_PER_GPU,
    MAX_UNITS_PER_NODE,
)

TIME_SLICING = ("time-slicing", "time-sharing", "mps")
"""Sharing strategies (GFD, GKE) under which the device plugin advertises ``replicas`` units per
physical GPU; MPS does too, so its units are replicas, not whole GPUs."""


class NodeDecoder:
    def __init__(self, catalog: Catalog, labels: LabelMapper) -> None:
        self._catalog = catalog
        self._labels = labels
        self._packs = mig_layout.PackCache()

    def decode(self, node: Mapping[str, Any]) -> NodeInfo:
        status = node.get("status") or {}
        allocatable = status.get("allocatable") or {}
        labels = objects.labels(node)
        annotations = objects.annotations(node)
        name = objects.name(node)
        problems: list[str] = []
        gpus: tuple[GpuDevice, ...] | None = None
        raw_type = ""
        if ANNOTATION_NODE_GPUS in annotations:
            try:
                # Replicas are nvidia.com/gpu.shared units when the node advertises that name
                # (renameByDefault), unless an entry says otherwise.
                renamed = _count(allocatable.get(RESOURCE_GPU_SHARED)) > 0
                gpus = self._from_annotation(annotations[ANNOTATION_NODE_GPUS], problems,
                                             renamed)
            except ValueError as exc:
                problems.append(f"metadata.annotations[{ANNOTATION_NODE_GPUS}]: {exc}; "
                                "falling back to labels")
        if gpus is None:
            gpus, raw_type = self._from_labels(labels, allocatable, problems)
        gpus = _bounded(gpus, problems)
        return NodeInfo(
            name=name,
            gpus=gpus,
            cpu_milli=lenient_quantity(quantity_to_milli, allocatable.get("cpu")),
            memory_mib=lenient_quantity(quantity_to_mib, allocatable.get("memory")),
            type_name=raw_type,
            problems=tuple(problems),
            labels=dict(labels) if gpus else {},
        )

    # -- annotation ---------------------------------------------------------------------------

    def _from_annotation(self, text: object, problems: list[str],
                         renamed: bool) -> tuple[GpuDevice, ...]:
        doc = load_object(text if isinstance(text, str | bytes) else b"", "")  # a ValueError
        if doc.get("version") != NODE_GPUS_VERSION:
            raise ValueError(f"must be an object with version {NODE_GPUS_VERSION}")
        entries = doc.get("gpus")
        if not isinstance(entries, list):
            raise ValueError("'gpus' must be a list")
        devices = []
        seen: set[int] = set()
        for i, entry in enumerate(entries):
            where = f"gpus[{i}]"
            try:
                device = self._device(entry, renamed)
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                problems.append(f"{ANNOTATION_NODE_GPUS} {where}: {exc!r}; GPU ignored")
                continue
            if device.index in seen:
                problems.append(f"{ANNOTATION_NODE_GPUS} {where}: duplicate index "
                                f"{device.index}; GPU ignored")
                continue
            if device.type_index == self._catalog.unknown_index:
                problems.append(f"{ANNOTATION_NODE_GPUS} {where}: unknown GPU type "
                                f"{entry.get('type')!r}")
            seen.add(device.index)
            devices.append(device)
        return tuple(sorted(devices, key=lambda d: d.index))

    def _device(self, entry: Mapping[str, Any], renamed: bool) -> GpuDevice:
        memory = int(entry.get("memoryMiB", 0)) or None
        type_index = self._catalog.resolve_node_type(str(entry["type"]), memory)
        if type_index is None:
            type_index = self._catalog.unknown_index
        if memory is None:
            memory = int(self._catalog.memory_mib[type_index])
        mig = entry.get("mig")
        layout = None
        if mig:
            if self._catalog.mig_slots[type_index] == 0:
                raise ValueError(f"type {entry['type']!r} has no MIG geometry in the catalog")
            if mig.get("mode") == "dynamic":
                layout = MigLayout(dynamic=True)
            elif mig.get("mode") == "static":
                instances = tuple((str(x["profile"]), int(x["start"]))
                                  for x in mig.get("instances", []))
                self._check_instances(type_index, instances)
                layout = MigLayout(dynamic=False, instances=instances)
            else:
                raise ValueError(f"mig.mode {mig.get('mode')!r} (accepted: dynamic, static)")
        index = int(entry["index"])
        replicas = int(entry.get("replicas", 0))
        if index < 0 or memory <= 0 or replicas < 0:
            raise ValueError("index, memoryMiB and replicas must be >= 0")
        if index >= MAX_GPU_INDEX:
            raise ValueError(f"index {index} is beyond any GPU (accepted: 0..{MAX_GPU_INDEX - 1})")
        healthy = entry.get("healthy", True)
        if not isinstance(healthy, bool):  # bool("false") is True
            raise ValueError(f"healthy must be true or false, got {healthy!r}")
        resource = entry.get("replicaResource",
                             RESOURCE_GPU_SHARED if renamed else RESOURCE_GPU)
        if resource not in (RESOURCE_GPU, RESOURCE_GPU_SHARED):
            raise ValueError(f"replicaResource {resource!r} (accepted: {RESOURCE_GPU}, "
                             f"{RESOURCE_GPU_SHARED})")
        uuid = entry.get("uuid")
        if uuid is not None and not isinstance(uuid, str):  # it reaches pods' env and grants
            raise ValueError(f"uuid must be a string, got {uuid!r}")
        return GpuDevice(index=index, type_index=type_index, memory_mib=memory,
                         uuid=uuid or None, replicas=replicas,
                         replicas_shared=resource == RESOURCE_GPU_SHARED, mig=layout,
                         healthy=healthy)

    def _check_instances(self, type_index: int, instances: tuple[tuple[str, int], ...]) -> None:
        """A static layout must be one the GPU can have: known profiles at legal, disjoint
        starts (the inventory would silently drop anything else)."""
        used = 0
        for name, start in instances:
            profile = self._catalog.mig_profile(type_index, name)
            if profile is None:
                raise ValueError(f"MIG profile {name!r} is not a profile of "
                                 f"{self._catalog.id_of(type_index)}")
            if start not in profile.starts:
                raise ValueError(f"MIG {name} cannot start at {start} (accepted starts: "
                                 f"{', '.join(map(str, profile.starts))})")
            span = ((1 << profile.slices) - 1) << start
            if used & span:
                raise ValueError(f"MIG {name} at start {start} overlaps another instance")
            used |= span

    # -- labels + allocatable ---------------------------------------------------------------

    def _from_labels(self, labels: Mapping[str, str], allocatable: Mapping[str, Any],
                     problems: list[str]) -> tuple[tuple[GpuDevice, ...], str]:
        units = _advertised(allocatable)
        if not (units.whole or units.shared or units.mig):
            return (), ""
        found = self._labels.node_type(labels)
        type_index = self._label_type(found, problems)
        facts = self._label_facts(labels, found, type_index)
        if facts.partition and units.whole:
            return self._partition_devices(type_index, units, facts, problems), found.raw_name
        if units.whole and facts.physical and units.whole > facts.physical and \
                not units.shared and not facts.sharing and facts.replicas <= 1:
            inferred = self._infer_units(type_index, units.whole, facts.physical, found,
                                         problems)
            if inferred is not None:
                return inferred, found.raw_name
            facts = replace(facts, replicas=units.whole // facts.physical, time_sliced=True)
        devices = _shared_devices(type_index, units, facts, problems)
        devices += _whole_devices(type_index, units, facts, first=len(devices))
        devices += self._mig_devices(type_index, units, facts, devices, problems)
        return tuple(devices), found.raw_name

    def _label_type(self, found: NodeTypeLabel, problems: list[str]) -> int:
        """The type the labels name; ``unknown`` (with a problem saying what to add) when none
        or one the catalog does not know."""
        if found.type_index is None:
            problems.append("advertises GPUs but has no GPU type label (expected one of: "
                            + ", ".join(self._labels.type_label_keys)
                            + ", or node.kubernetes.io/instance-type of a known instance type)")
            return self._catalog.unknown_index
        if found.type_index == self._catalog.unknown_index:
            mapped = self._labels.custom_values(found.key)
            if mapped and found.raw_name not in mapped:
                problems.append(f"{found.key}={found.raw_name!r} is not in this label's map "
                                f"under nodeLabels.custom (it maps: {', '.join(mapped)}); add "
                                "it there with the catalog type it means")
            else:
                problems.append(f"{found.key}={found.raw_name!r} is not in the accelerator "
                                "catalog (add it under `accelerators` with this name in "
                                "`aliases`)")
        return found.type_index

    def _label_facts(self, labels: Mapping[str, str], found: NodeTypeLabel,
                     type_index: int) -> _LabelFacts:
        """What the sharing, size and partition labels say. They may come from another
        convention than the type label (a Karpenter node runs GFD too): each is read from the
        type's preset first, then any."""
        presets = [p for p in (found.preset, *self._labels.presets) if p is not None]

        def label(attribute: str) -> str | None:
            for preset in presets:
                key = getattr(preset, attribute)
                if key is not None and key in labels:
                    return str(labels[key])
            return None

        gfd_profile = gfd_mig_profile(labels.get(GFD.type_key, ""))
        # GFD's single strategy describes one MIG device: its memory and count labels are
        # per instance, not per physical GPU.
        memory = (None if gfd_profile else _int(label("memory_key"))) \
            or int(self._catalog.memory_mib[type_index])
        gfd_count_key = GFD.count_key or ""
        count_label = None if gfd_profile and gfd_count_key in labels and \
            label("count_key") == labels[gfd_count_key] else _int(label("count_key"))
        replicas = _int(label("replicas_key")) or 0
        sharing = label("sharing_key") or ""
        return _LabelFacts(
            partition=label("partition_key") or gfd_profile,
            memory_mib=memory,
            count_label=count_label,
            physical=count_label or found.instance_count,
            replicas=replicas,
            sharing=sharing,
            time_sliced=replicas > 1 and (not sharing or sharing in TIME_SLICING),
        )

    def _partition_devices(self, type_index: int, units: _Advertised, facts: _LabelFacts,
                           problems: list[str]) -> tuple[GpuDevice, ...]:
        """``nvidia.com/gpu`` units on a node labelled with one MIG partition: instances."""
        assert facts.partition is not None
        instances = units.whole // facts.replicas if facts.time_sliced else units.whole
        if facts.time_sliced:
            problems.append(f"time-sharing on MIG {facts.partition} partitions "
                            f"({facts.replicas} clients per instance): counted as one pod per "
                            "instance")
        return tuple(self._partitioned(type_index, facts.partition, instances, facts.physical,
                                       problems))

    def _mig_devices(self, type_index: int, units: _Advertised, facts: _LabelFacts,
                     devices: list[GpuDevice], problems: list[str]) -> list[GpuDevice]:
        """The physical GPUs holding the advertised MIG instances (mixed strategy), after the
        whole and shared ``devices``."""
        if not units.mig:
            return []
        # GFD's gpu.count (or the instance type) counts physical GPUs, MIG-enabled or not.
        mig_gpus = facts.physical - len(devices) if facts.physical else 0
        if facts.physical and mig_gpus <= 0:
            problems.append(f"states {facts.physical} GPU(s), all taken by whole or shared "
                            "GPUs, yet advertises MIG instances; their GPUs are counted as well")
        return [GpuDevice(len(devices) + i, type_index, facts.memory_mib, mig=layout)
                for i, layout in enumerate(
                    self._pack_mig(type_index, units.mig, mig_gpus or None, problems))]

    def _infer_units(self, type_index: int, units: int, physical: int, found: NodeTypeLabel,
                     problems: list[str]) -> tuple[GpuDevice, ...] | None:
        """A node that states ``physical`` GPUs but advertises more ``nvidia.com/gpu`` units,
        with no sharing label (an AKS MIG pool: ``--gpu-instance-profile MIG1g`` on
        Standard_ND96asr_v4 advertises ``nvidia.com/gpu: 56``). ``units / physical`` instances
        per GPU is MIG when exactly one profile of the type has that many instances; otherwise
        the units are taken for time-slice replicas (``None`` returned)."""
        per_gpu, rest = divmod(units, physical)
        source = f"{found.key}={found.raw_name}" if found.key else "its GPU count"
        geometry = self._catalog.types[type_index].mig \
            if type_index < len(self._catalog) else None
        candidates = [p for p in geometry.profiles if _max_instances(p) == per_gpu] \
            if geometry is not None and not rest else []
        if len(candidates) == 1:
            profile = candidates[0].name
            problems.append(f"inferred MIG {profile}: {source} says {physical} GPU(s) and "
                            f"{RESOURCE_GPU}={units} with no sharing label; {per_gpu} "
                            f"instances per GPU is only {profile} (label the node with its "
                            "partition, e.g. nvidia.com/mig.strategy and GFD, to say so)")
            return tuple(self._partitioned(type_index, profile, units, physical, problems))
        problems.append(f"inferred time-slicing: {source} says {physical} GPU(s) and "
                        f"{RESOURCE_GPU}={units} with no sharing label; read as "
                        f"{units // physical} replicas per GPU")
        return None

    def _partitioned(self, type_index: int, profile_name: str, instances: int,
                     physical: int | None, problems: list[str]) -> list[GpuDevice]:
        """Physical GPUs carrying ``instances`` MIG instances of one profile in all (GKE
        partition size, GFD single strategy, an AKS MIG pool): the device plugin advertises
        each instance as one ``nvidia.com/gpu``."""
        profile = self._catalog.mig_profile(type_index, profile_name)
        if profile is None:
            problems.append(f"partition {profile_name!r} is not a MIG profile of "
                            f"{self._catalog.id_of(type_index)}; its GPUs are ignored")
            return []
        most = _max_instances(profile)
        if not physical:
            physical = -(-instances // most)
        if instances > physical * most:
            problems.append(f"advertises {instances} MIG {profile_name} instances; {physical} "
                            f"GPU(s) hold at most {physical * most}: the rest are ignored")
            instances = physical * most
        base, extra = divmod(instances, physical)
        memory = int(self._catalog.memory_mib[type_index])
        devices = []
        for i in range(physical):
            placed = _lowest_starts(profile, base + (1 if i < extra else 0))
            devices.append(GpuDevice(i, type_index, memory, mig=MigLayout(
                dynamic=False, instances=tuple((profile.name, s) for s in placed))))
        return devices

    def _pack_mig(self, type_index: int, counts: Mapping[str, int], gpus: int | None,
                  problems: list[str]) -> list[MigLayout]:
        """Static MIG layouts, one per physical GPU, that hold exactly the advertised instance
        counts (mixed strategy) on ``gpus`` GPUs when the node states how many (see
        ``kube.mig_layout``)."""
        geometry = (self._catalog.types[type_index].mig
                    if type_index < len(self._catalog) else None)
        if geometry is None:
            problems.append("advertises MIG resources but its GPU type has no MIG geometry")
            return []
        wanted: dict[MigProfile, int] = {}
        for name, count in counts.items():
            profile = geometry.profile(name)
            if profile is None:
                problems.append(f"{RESOURCE_MIG_PREFIX}{name} is not a profile of "
                                f"{self._catalog.id_of(type_index)}; ignored")
                continue
            wanted[profile] = count
        packing = self._packs.pack(geometry.slots, wanted, gpus)
        problems += packing.problems
        return [MigLayout(dynamic=False, instances=instances) for instances in packing.layouts]


@dataclass(frozen=True)
class _Advertised:
    """What ``status.allocatable`` advertises (counts capped by ``_count``)."""

    whole: int
    shared: int
    mig: dict[str, int]
    """MIG profile -> instances, only those advertised."""


@dataclass(frozen=True)
class _LabelFacts:
    """What a node's labels say besides its type."""

    partition: str | None
    """The one MIG profile every GPU is partitioned into (GKE, Flyte, GFD single)."""
    memory_mib: int
    """Per physical GPU (the label, else the type's)."""
    count_label: int | None
    """The GPU count label (not GFD's per-instance count on the single strategy)."""
    physical: int | None
    """Physical GPUs, from the count label or the instance type."""
    replicas: int
    sharing: str
    time_sliced: bool


def _advertised(allocatable: Mapping[str, Any]) -> _Advertised:
    return _Advertised(
        whole=_count(allocatable.get(RESOURCE_GPU)),
        shared=_count(allocatable.get(RESOURCE_GPU_SHARED)),
        mig={name[len(RESOURCE_MIG_PREFIX):]: _count(value)
             for name, value in allocatable.items()
             if name.startswith(RESOURCE_MIG_PREFIX) and _count(value) > 0})


def _shared_devices(type_index: int, units: _Advertised, facts: _LabelFacts,
                    problems: list[str]) -> list[GpuDevice]:
    """``nvidia.com/gpu.shared`` units (renameByDefault): replicas over the physical GPUs."""
    if not units.shared:
        return []
    physical = facts.count_label or (units.shared // facts.replicas if facts.replicas > 1
                                     else 0)
    if physical <= 0 or units.shared % physical:
        problems.append(f"{RESOURCE_GPU_SHARED}={units.shared} without a GPU count or replica "
                        "label; assumed one GPU")
        physical = 1
    per_gpu = units.shared // physical
    return [GpuDevice(i, type_index, facts.memory_mib, replicas=per_gpu, replicas_shared=True)
            for i in range(physical)]


def _whole_devices(type_index: int, units: _Advertised, facts: _LabelFacts, *,
                   first: int) -> list[GpuDevice]:
    """``nvidia.com/gpu`` units: time-slice replicas over the physical GPUs, or whole GPUs;
    indices from ``first``."""
    if not units.whole:
        return []
    memory = facts.memory_mib
    if facts.time_sliced and not units.shared:
        physical = facts.physical or max(1, units.whole // facts.replicas)
        return [GpuDevice(first + i, type_index, memory, replicas=facts.replicas)
                for i in range(physical)]
    return [GpuDevice(first + i, type_index, memory)
            for i in range(min(units.whole, MAX_GPUS_PER_NODE + 1))]


def _lowest_starts(profile: MigProfile, count: int) -> list[int]:
    """The first ``count`` non-overlapping legal starts of ``profile``, lowest first."""
    used, starts = 0, list[int]()
    span = (1 << profile.slices) - 1
    for start in profile.starts:
        if len(starts) == count:
            break
        if not used & (span << start):
            used |= span << start
            starts.append(start)
    return starts


def _max_instances(profile: MigProfile) -> int:
    return len(_lowest_starts(profile, len(profile.starts)))


def _count(value: object) -> int:
    """An allocatable count, lenient (0 when unreadable) and capped at ``MAX_UNITS_PER_NODE``
    (``_bounded`` then reports what was cut), so a node saying ``nvidia.com/gpu: 1e18`` never
    becomes 10^18 objects."""
    if value is None:
        return 0
    try:
        return min(MAX_UNITS_PER_NODE + 1, max(0, int(parse_quantity(value))))
    except QuantityError:
        return 0


def _bounded(gpus: tuple[GpuDevice, ...], problems: list[str]) -> tuple[GpuDevice, ...]:
    """At most ``MAX_GPUS_PER_NODE`` GPUs, each with replicas and memory within bounds; every
    cut is said in the node's problems (the inventory models what is left)."""
    if len(gpus) > MAX_GPUS_PER_NODE:
        problems.append(f"the node describes more than {MAX_GPUS_PER_NODE} GPUs; at most "
                        f"{MAX_GPUS_PER_NODE} per node are modelled, the rest are ignored")
        gpus = gpus[:MAX_GPUS_PER_NODE]
    out = []
    for described in gpus:
        gpu = described
        if gpu.replicas > MAX_REPLICAS_PER_GPU or gpu.memory_mib > MAX_GPU_MEMORY_MIB:
            problems.append(f"GPU {gpu.index}: {gpu.replicas} replicas / {gpu.memory_mib} MiB "
                            f"is beyond what a GPU may be described with (at most "
                            f"{MAX_REPLICAS_PER_GPU} replicas and {MAX_GPU_MEMORY_MIB} MiB); "
                            "capped")
            gpu = replace(gpu, replicas=min(gpu.replicas, MAX_REPLICAS_PER_GPU),
                          memory_mib=min(gpu.memory_mib, MAX_GPU_MEMORY_MIB))
        out.append(gpu)
    return tuple(out)


def _int(value: str | None) -> int | None:
    """A numeric label; ``None`` when absent, not a number, or absurd (more digits than any
    count or MiB figure has: ``int()`` of a long digit string is quadratic)."""
    if value is None or len(value) > 18:
        return None
    try:
        return int(value)
    except ValueError:
        return None
