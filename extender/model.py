"""The domain vocabulary shared by every layer: what a pod asks for, what a node has, what a
pod was given. No I/O, no numpy: small frozen values."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum

ANNOTATION_PREFIX = "gpu-extender.io/"
LABEL_ACCELERATOR = ANNOTATION_PREFIX + "accelerator"
ANNOTATION_ACCELERATORS = ANNOTATION_PREFIX + "accelerators"
ANNOTATION_EXCLUDE = ANNOTATION_PREFIX + "exclude-accelerators"
ANNOTATION_ASSIGNED = ANNOTATION_PREFIX + "assigned"
ANNOTATION_VISIBLE_DEVICES = ANNOTATION_PREFIX + "visible-devices"
ANNOTATION_OBSERVED = ANNOTATION_PREFIX + "assigned-observed"
"""The node agent's correction of ``assigned``: the same schema, with the devices the kubelet
really gave the containers. When present and valid it is what the pod holds."""
ASSIGNMENT_ANNOTATIONS = (ANNOTATION_OBSERVED, ANNOTATION_ASSIGNED)
"""Where a pod's assignment is read from, strongest first."""
ANNOTATION_NODE_GPUS = ANNOTATION_PREFIX + "gpus"
RESOURCE_GPU_MEMORY = ANNOTATION_PREFIX + "gpu-memory"
RESOURCE_GPU_MILLI = ANNOTATION_PREFIX + "gpu-milli"
RESOURCE_GPU = "nvidia.com/gpu"
RESOURCE_GPU_SHARED = "nvidia.com/gpu.shared"
RESOURCE_MIG_PREFIX = "nvidia.com/mig-"

ASSIGNED_VERSION = 1
NODE_GPUS_VERSION = 1


class RequestKind(StrEnum):
    """The ways to ask for GPU capacity (exactly one per pod)."""

    WHOLE = "whole"
    """``nvidia.com/gpu: N``: N distinct GPUs, each a whole unshared GPU or, on a GPU that
    advertises time-slice replicas, one replica."""
    SHARED = "shared"
    """``nvidia.com/gpu.shared: N``: one time-slice replica on each of N distinct GPUs."""
    MIG = "mig"
    """``nvidia.com/mig-<profile>: N``: N MIG instances of one profile."""
    VRAM = "vram"
    """``gpu-extender.io/gpu-memory: 4Gi``: a VRAM share of one GPU."""
    FRACTION = "fraction"
    """``gpu-extender.io/gpu-milli: 470``: thousandths of one GPU, whatever its size (the
    openb trace's ``gpu_milli``, KAI's ``gpu-fraction``); holds that share of its VRAM."""


@dataclass(frozen=True)
class PodKey:
    namespace: str
    name: str
    uid: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class GpuRequest:
    """What one pod asks for, decoded once (containers summed, init containers maxed).

    ``types`` are the catalog indices the pod accepts (``None``: untyped, any unprotected type);
    ``excluded`` are removed from either.
    """

    kind: RequestKind
    count: int
    vram_mib: int = 0
    milli: int = 0
    """Thousandths of one GPU (``FRACTION`` only)."""
    mig_profile: str | None = None
    types: frozenset[int] | None = None
    excluded: frozenset[int] = frozenset()
    type_source: str = ""
    """Where the pod named its type, for messages (``label gpu-extender.io/accelerator``)."""
    selection: Hashable | None = None
    """An untyped pod's required node selection (``kube.selection.NodeSelection``), resolved
    against the inventory's node labels when the request is placed."""

    @property
    def typed(self) -> bool:
        return self.types is not None

    def describe(self) -> str:
        if self.kind is RequestKind.VRAM:
            return f"{self.vram_mib} MiB VRAM share"
        if self.kind is RequestKind.FRACTION:
            return f"{self.milli / 1000:g} of a GPU"
        if self.kind is RequestKind.MIG:
            return f"{self.count} x MIG {self.mig_profile}"
        if self.kind is RequestKind.SHARED:
            return f"{self.count} time-slice replica(s)"
        return f"{self.count} GPU(s)"


@dataclass(frozen=True)
class MigLayout:
    """MIG state of a partitioned GPU.

    ``dynamic``: the extender chooses profile placements (any legal start on free slots).
    Otherwise ``instances`` is the fixed layout created on the node (profile, start slot).
    """

    dynamic: bool
    instances: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class GpuDevice:
    """One physical GPU as the node describes it."""

    index: int
    type_index: int
    memory_mib: int
    uuid: str | None = None
    replicas: int = 0
    """Time-slice replicas (0 or 1: not time-sliced)."""
    replicas_shared: bool = False
    """The replicas are advertised as ``nvidia.com/gpu.shared`` (device plugin
    ``renameByDefault``), so only ``nvidia.com/gpu.shared`` requests can use them; otherwise
    they are ``nvidia.com/gpu`` units and only ``nvidia.com/gpu`` requests can."""
    mig: MigLayout | None = None
    healthy: bool = True
    dra_device: str = ""
    """The name of the DRA device that is this GPU (``gpu-0``), when a DRA driver publishes it
    in a ResourceSlice instead of a device plugin; '' for device-plugin GPUs."""


@dataclass(frozen=True)
class DraDeviceRef:
    """A device a DRA driver publishes on a node (a full GPU, a MIG device, a partition) and the
    physical GPU it is part of: allocating it holds ``memory_mib`` of that GPU."""

    name: str
    gpu_index: int
    kind: str
    """The driver's ``type`` attribute: ``gpu``, ``mig``..."""
    memory_mib: int
    uuid: str | None = None
    profile: str = ""


@dataclass(frozen=True)
class NodeInfo:
    """A node decoded from its Node object (labels, allocatable, ``gpu-extender.io/gpus``)."""

    name: str
    gpus: tuple[GpuDevice, ...]
    cpu_milli: int = 0
    memory_mib: int = 0
    type_name: str = ""
    """The raw type name the node advertised (kept for messages about unknown types)."""
    problems: tuple[str, ...] = ()
    """What could not be understood (an unknown model, a malformed annotation)."""
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    """The node's labels, for pods whose node selection types them (``kube/selection.py``)."""
    dra_devices: tuple[DraDeviceRef, ...] = ()
    """Non-empty on a DRA-managed node (``kube/decode_dra.py``): every device its DRA driver
    publishes; ``gpus`` then holds the full GPUs among them. Claims hold its GPUs, never the
    extender's own shares, MIG instances or time-slices."""

    @property
    def dra(self) -> bool:
        return bool(self.dra_devices)


@dataclass(frozen=True)
class GpuGrant:
    """The part of one physical GPU a pod was given."""

    index: int
    vram_mib: int
    whole: bool = False
    replica: bool = False
    mig_profile: str | None = None
    mig_start: int = -1
    mig_slices: int = 0
    uuid: str | None = None


@dataclass(frozen=True)
class Assignment:
    """Where a pod runs and which GPU capacity it holds; persisted in its annotation."""

    node: str
    kind: RequestKind
    grants: tuple[GpuGrant, ...]
    type_id: str = ""
    generation: int = 0

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        return tuple(sorted({g.index for g in self.grants}))


@dataclass(frozen=True)
class PodInfo:
    """A pod decoded from its Pod object: identity, request, where it is, what it holds."""

    key: PodKey
    request: GpuRequest | None
    cpu_milli: int = 0
    memory_mib: int = 0
    node_name: str = ""
    assignment: Assignment | None = None
    terminal: bool = False
    """Succeeded or Failed: holds nothing any more."""
    problems: tuple[str, ...] = field(default_factory=tuple)


class Verdict(Enum):
    """Per-node filter outcome; maps one-to-one onto the extender wire fields."""

    FITS = 0
    UNSCHEDULABLE = 1
    """Full now; could fit after preemption or departures -> ``FailedNodes``."""
    UNRESOLVABLE = 2
    """Can never host this pod (wrong type, protected, too small) ->
    ``FailedAndUnresolvableNodes``."""
