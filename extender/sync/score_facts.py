"""What the exact cut needs to know about the cluster, kept from the watches (docs/score-cut.md).

kube-scheduler's set-dependent score plugins are inert for a pod only if (``kube/score_inert.py``)
no feasible node has a PreferNoSchedule taint the pod does not tolerate, no Service with a
selector selects the pod (when it has no spread constraints of its own), and no pod in the
cluster has an inter-pod affinity section. ``ScoreFacts`` keeps those three facts from the node
and pod events the inventory's watches already receive and from a Services watch
(``ClusterSync``: list, watch, relist on 410, like every other kind); until all three kinds
have listed once, ``known()`` is False and the cut does not apply.

Pods with affinity are counted pending or bound (the pod watch lists every non-terminal pod, as
kube-scheduler's own informer does, ``pkg/scheduler/scheduler.go:660``): a pod exists in the
API before kube-scheduler can assume it, so the count covers kube-scheduler's assumed pods
too, up to the lag between the two watches of the same object.

Thread-safety: written by the watch threads, read by the verbs; one lock, a leaf.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from extender.kube import objects
from extender.kube.filters.facts import Taint
from extender.kube.score_inert import (
    has_pod_affinity,
    prefer_no_schedule_taints,
    service_selector,
)

DELETED = "DELETED"
KINDS = ("nodes", "pods", "services")


class ScoreFacts:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tainted: dict[str, tuple[Taint, ...]] = {}
        self._affinity: set[str] = set()
        self._services: dict[str, dict[str, dict[str, str]]] = {}
        """namespace -> name -> selector (only Services with a non-empty selector)."""
        self._listed: set[str] = set()

    def known(self) -> bool:
        with self._lock:
            return len(self._listed) == len(KINDS)

    # -- what the cut asks ---------------------------------------------------------------------

    def tainted_among(self, names: Sequence[str]) -> list[tuple[Taint, ...]]:
        """The PreferNoSchedule taints of those of ``names`` that have any."""
        with self._lock:
            tainted = dict(self._tainted)
        if not tainted:
            return []
        return [tainted[n] for n in names if n in tainted]

    def selectors(self, namespace: str) -> list[dict[str, str]]:
        with self._lock:
            return list(self._services.get(namespace, {}).values())

    def pods_with_affinity(self) -> int:
        with self._lock:
            return len(self._affinity)

    # -- the watches ---------------------------------------------------------------------------

    def node_event(self, event_type: str, node: Mapping[str, Any]) -> None:
        name = objects.name(node)
        taints = () if event_type == DELETED else prefer_no_schedule_taints(node)
        with self._lock:
            if taints:
                self._tainted[name] = taints
            else:
                self._tainted.pop(name, None)

    def replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        tainted = {objects.name(n): t for n in nodes if (t := prefer_no_schedule_taints(n))}
        with self._lock:
            self._tainted = tainted
            self._listed.add("nodes")

    def pod_event(self, event_type: str, pod: Mapping[str, Any]) -> None:
        key = _pod_key(pod)
        counted = event_type != DELETED and has_pod_affinity(pod) and \
            objects.section(pod, "status").get("phase") not in ("Succeeded", "Failed")
        with self._lock:
            if counted:
                self._affinity.add(key)
            else:
                self._affinity.discard(key)

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        affinity = {_pod_key(p) for p in pods if has_pod_affinity(p) and
                    objects.section(p, "status").get("phase") not in ("Succeeded", "Failed")}
        with self._lock:
            self._affinity = affinity
            self._listed.add("pods")

    def service_event(self, event_type: str, service: Mapping[str, Any]) -> None:
        namespace, name = objects.namespace(service), objects.name(service)
        selector = None if event_type == DELETED else service_selector(service)
        with self._lock:
            names = self._services.setdefault(namespace, {})
            if selector is None:
                names.pop(name, None)
            else:
                names[name] = selector

    def replace_services(self, services: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        by_namespace: dict[str, dict[str, dict[str, str]]] = {}
        for service in services:
            selector = service_selector(service)
            if selector is not None:
                by_namespace.setdefault(objects.namespace(service), {})[
                    objects.name(service)] = selector
        with self._lock:
            self._services = by_namespace
            self._listed.add("services")
        return {}


def _pod_key(pod: Mapping[str, Any]) -> str:
    return objects.uid(pod) or f"{objects.namespace(pod)}/{objects.name(pod)}"
