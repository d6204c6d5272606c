"""What preemption must know about a pod that might be evicted, read from its JSON: priority,
age, and what protects it (terminating, finished, DaemonSet, static). Pure, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from extender.kube import objects

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass(frozen=True)
class EvictionFacts:
    node: str
    priority: int = 0
    """``spec.priority`` (the Priority admission plugin sets it from the PriorityClass; 0
    when absent, as kube-scheduler's ``corev1helpers.PodPriority`` reads it)."""
    started: float = 0.0
    """``status.startTime``, else ``metadata.creationTimestamp``, in epoch seconds."""
    terminating: bool = False
    finished: bool = False
    daemon_set: bool = False
    static: bool = False


def eviction_facts(pod: Mapping[str, Any]) -> EvictionFacts:
    meta = objects.meta(pod)
    spec = objects.section(pod, "spec")
    status = objects.section(pod, "status")
    priority = spec.get("priority")
    owners = meta.get("ownerReferences")
    daemon_set = isinstance(owners, list) and any(
        isinstance(o, Mapping) and o.get("kind") == "DaemonSet" for o in owners)
    return EvictionFacts(
        node=objects.node_name(pod),
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool)
        else 0,
        started=_epoch(status.get("startTime")) or _epoch(meta.get("creationTimestamp")),
        terminating=meta.get("deletionTimestamp") is not None,
        finished=status.get("phase") in ("Succeeded", "Failed"),
        daemon_set=daemon_set,
        static=MIRROR_ANNOTATION in objects.annotations(pod))


def _epoch(value: object) -> float:
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
