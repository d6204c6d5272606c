"""Which annotations hand the GPU of a VRAM share or fraction to its containers, and which node
pools can hand one over at all (docs/handoff.md).

The toolkit's NRI plugin (nvidia-container-toolkit ``cmd/nvidia-ctk-installer/container/
runtime/nri/plugin.go``) reads ``nvidia.cdi.k8s.io/container.<name>`` at CreateContainer and
injects the CDI devices it names; GPU Operator 25.10+ ignores the env var, Bottlerocket refuses
it for unprivileged pods. So the Binding (one write) also carries, for every container that
holds the share, ``nvidia.cdi.k8s.io/container.<name>: nvidia.com/gpu=<UUID>`` (the UUID the
node agent published; the index where it published none). Pods whose devices the device plugin
allocates (whole GPUs, MIG instances, time-slice replicas) get none: the kubelet hands theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.config.presets import PRESETS
from extender.config.types import HandoffConfig, HandoffMode
from extender.errors import RequestError
from extender.inventory.snapshot import ClusterSnapshot
from extender.kube import objects
from extender.kube.decode_pod import PodDecoder
from extender.kube.forms import KAI_ANNOTATIONS
from extender.model import Assignment, RequestKind

CDI_PREFIX = "nvidia.cdi.k8s.io/"
CDI_CONTAINER_PREFIX = CDI_PREFIX + "container."
CDI_GPU_KIND = "nvidia.com/gpu"
SHARE_KINDS = frozenset({RequestKind.VRAM, RequestKind.FRACTION})
"""Requests whose GPU the extender alone chooses (no device plugin allocates it)."""
MAX_ANNOTATION_NAME = 63
"""The name part of an annotation key (after the ``/``) is a qualified name of at most 63
characters: ``container.<name>`` holds container names of at most 53."""
KAI_CONTAINER_ANNOTATION = "gpu-fraction-container-name"
"""KAI Scheduler: which container a pod-level ``gpu-fraction`` / ``gpu-memory`` is for
(default: the first container)."""


@dataclass(frozen=True)
class Handoff:
    """What the Binding adds for one share pod, and what to tell its owner."""

    annotations: Mapping[str, str]
    unknown_uuid: bool = False
    """The node published no UUID for the GPU: the annotation names its index."""
    too_long: tuple[str, ...] = ()
    """Containers whose names are too long for an annotation key (no annotation for them)."""


def share_containers(decoder: PodDecoder, pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the containers (and init containers) that hold the pod's share: those
    whose own resources ask for one (each judged alone by the pod decoder, so every foreign
    form counts); for a pod-level KAI annotation, the container it names or the first one."""
    spec = pod.get("spec") or {}
    names: list[str] = []
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or ():
            if not isinstance(container, Mapping):
                continue
            alone = {"spec": {"containers": [{"name": container.get("name"),
                                              "resources": container.get("resources")}]}}
            try:
                request = decoder.request(alone)
            except RequestError:
                continue
            if request is not None and request.kind in SHARE_KINDS:
                names.append(str(container.get("name") or ""))
    if names:
        return tuple(names)
    annotations = objects.annotations(pod)
    if any(a in annotations for a in KAI_ANNOTATIONS):
        named = annotations.get(KAI_CONTAINER_ANNOTATION)
        if isinstance(named, str) and named:
            return (named,)
        containers = spec.get("containers") or ()
        if containers and isinstance(containers[0], Mapping):
            return (str(containers[0].get("name") or ""),)
    return ()


def cdi_device(assignment: Assignment) -> tuple[str, bool]:
    """The CDI device names of the share's GPU (``nvidia.com/gpu=GPU-...``) and whether its
    UUID was unknown (then the index: ``nvidia.com/gpu=3``)."""
    devices = []
    unknown = False
    for grant in assignment.grants:
        if grant.uuid:
            name = f"{CDI_GPU_KIND}={grant.uuid}"
        else:
            name, unknown = f"{CDI_GPU_KIND}={grant.index}", True
        if name not in devices:
            devices.append(name)
    return ",".join(devices), unknown


def handoff_annotations(assignment: Assignment | None, containers: Sequence[str],
                        mode: HandoffMode) -> Handoff:
    """The CDI annotations for a share pod on a ``cdi`` pool; nothing for any other pod."""
    if assignment is None or assignment.kind not in SHARE_KINDS or not containers or \
            mode is not HandoffMode.CDI:
        return Handoff({})
    device, unknown = cdi_device(assignment)
    suffix = CDI_CONTAINER_PREFIX[len(CDI_PREFIX):]
    fits = [n for n in containers if n and len(suffix) + len(n) <= MAX_ANNOTATION_NAME]
    return Handoff({CDI_CONTAINER_PREFIX + name: device for name in fits},
                   unknown_uuid=unknown,
                   too_long=tuple(n for n in containers if n and n not in fits))


def node_mode(config: HandoffConfig, labels: Mapping[str, str]) -> HandoffMode:
    """A node's pool: its own label wins, then the first preset whose type label it carries
    (in the config's order), then the default."""
    own = labels.get(config.node_label)
    if own is not None:
        try:
            return HandoffMode(own)
        except ValueError:
            pass  # an unknown value: the pool's other signals decide
    for name, mode in config.presets.items():
        preset = PRESETS.get(name)
        if preset is not None and preset.type_key in labels:
            return mode
    return config.default


class HandoffPools:
    """Per snapshot row: can its pool hand a share over? Recomputed only when the snapshot's
    node map changes (it is copy-on-write: a new object on every node change)."""

    def __init__(self, config: HandoffConfig) -> None:
        self.config = config
        self._cached: tuple[object, npt.NDArray[np.bool_]] = (None, np.zeros(0, dtype=bool))
        """(node map, rows refused): one attribute, so concurrent verbs never pair the rows
        of one map with another."""

    def refused_rows(self, snapshot: ClusterSnapshot) -> npt.NDArray[np.bool_]:
        """(n_nodes,) True where the pool's handoff is ``none``."""
        nodes, cached = self._cached
        if nodes is snapshot.nodes and cached.shape[0] == snapshot.n_nodes:
            return cached
        refused = np.zeros(snapshot.n_nodes, dtype=bool)
        for name, info in snapshot.nodes.items():
            row = snapshot.node_index.get(name)
            if row is not None and node_mode(self.config, info.labels) is HandoffMode.NONE:
                refused[row] = True
        self._cached = (snapshot.nodes, refused)
        return refused

    def mode(self, snapshot: ClusterSnapshot, node: str) -> HandoffMode:
        info = snapshot.nodes.get(node)
        return node_mode(self.config, info.labels if info is not None else {})
