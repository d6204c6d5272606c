"""The pods on this node as the agent needs them: identity, container ID -> name, whether they
ask for a GPU at all, and the assignment that holds (the agent's correction, else the
extender's choice), decoded with the extender's own codec.

Whatever a pod carries, reading it never raises (issue 19, finding 7): an annotation that does
not decode, names another node or holds a non-string UUID is ignored and becomes one of the
pod's ``problems`` (a pod owner cannot opt out of overuse detection by pointing its
``assigned-observed`` at another node); metadata is read through ``kube.objects``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.agent.cgroup import strip_scheme
from extender.kube import objects
from extender.kube.annotations import decode_assignment
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_OBSERVED,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MILLI,
    Assignment,
    PodKey,
)

GPU_RESOURCE_PREFIXES = ("nvidia.com/", RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI)
"""Extended resources that give a container a GPU (whole, shared, MIG) or a share of one."""


@dataclass(frozen=True)
class NodePod:
    key: PodKey
    containers: Mapping[str, str] = field(default_factory=dict)
    """Runtime container ID (no scheme) -> container name."""
    container_names: tuple[str, ...] = ()
    assigned: Assignment | None = None
    """What the extender chose (``gpu-extender.io/assigned``), on this node."""
    observed: Assignment | None = None
    """The agent's correction (``gpu-extender.io/assigned-observed``), when there is one."""
    observed_text: str | None = None
    problems: tuple[str, ...] = ()
    requests_gpu: bool = True
    """Whether any container asks for a GPU resource; a pod that does not declared 0 VRAM
    everywhere, so any use it makes (``NVIDIA_VISIBLE_DEVICES=all``) is overuse."""

    @property
    def assignment(self) -> Assignment | None:
        return self.observed or self.assigned


def node_pod(pod: Mapping[str, Any], node: str | None = None) -> NodePod:
    """``node``: the agent's node; an assignment for another node is ignored (a problem)."""
    annotations = objects.annotations(pod)
    problems = []
    decoded: dict[str, Assignment | None] = {}
    for key in (ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED):
        decoded[key], problem = _assignment(annotations.get(key), node)
        if problem:
            problems.append(f"metadata.annotations[{key}]: {problem}")
    containers = {}
    status = objects.section(pod, "status")
    for kind in ("initContainerStatuses", "containerStatuses"):
        for cs in _objects_in(status.get(kind)):
            container_id = cs.get("containerID")
            if isinstance(container_id, str) and container_id:
                containers[strip_scheme(container_id)] = _text(cs.get("name"))
    spec = objects.section(pod, "spec")
    specs = [*_objects_in(spec.get("initContainers")), *_objects_in(spec.get("containers"))]
    names = tuple(_text(c.get("name")) for c in _objects_in(spec.get("containers")))
    observed_text = annotations.get(ANNOTATION_OBSERVED)
    return NodePod(
        key=objects.pod_key(pod), containers=containers, container_names=names,
        assigned=decoded[ANNOTATION_ASSIGNED], observed=decoded[ANNOTATION_OBSERVED],
        observed_text=observed_text if isinstance(observed_text, str) and observed_text
        else None,
        problems=tuple(problems), requests_gpu=any(_asks_gpu(c) for c in specs))


def node_pods(pods: Iterable[Mapping[str, Any]], node: str) -> dict[str, NodePod]:
    """Pods bound to ``node`` that still run, by UID."""
    out = {}
    for pod in pods:
        if not isinstance(pod, Mapping) or objects.node_name(pod) != node:
            continue
        if objects.section(pod, "status").get("phase") in ("Succeeded", "Failed"):
            continue
        info = node_pod(pod, node)
        out[info.key.uid] = info
    return out


def _assignment(raw: object, node: str | None) -> tuple[Assignment | None, str | None]:
    """The decoded assignment, or ``None`` and why it is not used (``""``: cleared by the
    extender's Binding, absent)."""
    if raw is None or raw == "":
        return None, None
    if not isinstance(raw, str):
        return None, f"must be a JSON string, got {type(raw).__name__}"
    try:
        assignment = decode_assignment(raw)
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
        return None, f"ignored: {exc}"
    if node is not None and assignment.node != node:
        return None, (f"ignored: names node {assignment.node!r}, this agent serves "
                      f"{node!r}")
    bad = [grant.uuid for grant in assignment.grants
           if grant.uuid is not None and not isinstance(grant.uuid, str)]
    if bad:
        return None, f"ignored: uuid must be a string, got {bad[0]!r}"
    return assignment, None


def _asks_gpu(container: Mapping[str, Any]) -> bool:
    resources = objects.section(container, "resources")
    for part in ("requests", "limits"):
        for name in objects.section(resources, part):
            if isinstance(name, str) and name.startswith(GPU_RESOURCE_PREFIXES):
                return True
    return False


def _objects_in(value: object) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] \
        if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
