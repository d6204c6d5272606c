"""The pods on this node as the agent needs them: identity, container ID -> name, and the
assignment that holds (the agent's correction, else the extender's choice), decoded with the
extender's own codec."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.agent.cgroup import strip_scheme
from extender.kube.annotations import decode_assignment
from extender.model import ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED, Assignment, PodKey


@dataclass(frozen=True)
class NodePod:
    key: PodKey
    containers: Mapping[str, str] = field(default_factory=dict)
    """Runtime container ID (no scheme) -> container name."""
    container_names: tuple[str, ...] = ()
    assigned: Assignment | None = None
    """What the extender chose (``gpu-extender.io/assigned``)."""
    observed: Assignment | None = None
    """The agent's correction (``gpu-extender.io/assigned-observed``), when there is one."""
    observed_text: str | None = None
    problems: tuple[str, ...] = ()

    @property
    def assignment(self) -> Assignment | None:
        return self.observed or self.assigned


def node_pod(pod: Mapping[str, Any]) -> NodePod:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    annotations = meta.get("annotations") or {}
    problems = []
    decoded: dict[str, Assignment | None] = {}
    for key in (ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED):
        raw = annotations.get(key)
        decoded[key] = None
        if raw is not None:
            try:
                decoded[key] = decode_assignment(raw)
            except ValueError as exc:
                problems.append(f"metadata.annotations[{key}]: {exc}")
    containers = {}
    for kind in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(kind) or []:
            if cs.get("containerID"):
                containers[strip_scheme(str(cs["containerID"]))] = str(cs.get("name", ""))
    names = tuple(str(c.get("name", "")) for c in spec.get("containers") or [])
    return NodePod(
        key=PodKey(str(meta.get("namespace", "")), str(meta.get("name", "")),
                   str(meta.get("uid", ""))),
        containers=containers, container_names=names,
        assigned=decoded[ANNOTATION_ASSIGNED], observed=decoded[ANNOTATION_OBSERVED],
        observed_text=annotations.get(ANNOTATION_OBSERVED), problems=tuple(problems))


def node_pods(pods: Iterable[Mapping[str, Any]], node: str) -> dict[str, NodePod]:
    """Pods bound to ``node`` that still run, by UID."""
    out = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        if spec.get("nodeName") != node or phase in ("Succeeded", "Failed"):
            continue
        info = node_pod(pod)
        out[info.key.uid] = info
    return out
