"""``KubeNodes``: the nodes and the pods bound to them, as kube-scheduler's cache holds them
(``pkg/scheduler/backend/cache``: a node's ``Requested``, pod count and used host ports are
the sums over its non-terminal pods), and ``filter``: the nodes kube-scheduler's in-tree
filters would pass to the extender, and why the others are left out.

Fed by whoever has the objects: the what-if from a cluster dump (and each pod it places), the
shadow from its watch, ``explain`` from a list. Thread-safe (one leaf lock: nothing is called
while it is held).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extender.kube import objects
from extender.kube.filters.facts import HostPort, NodeFacts, PodDemand, node_facts, pod_demand
from extender.kube.filters.rules import Exclusion, NodeUse, first_exclusion
from extender.kube.shape import has_node_shape, has_pod_shape


@dataclass(frozen=True, eq=False)
class KubeVerdict:
    feasible: list[str]
    """The nodes that pass, sorted by name."""
    excluded: dict[str, Exclusion] = field(default_factory=dict)


class _Use:
    __slots__ = ("pods", "ports", "requested")

    def __init__(self) -> None:
        self.requested: dict[str, int] = {}
        self.pods = 0
        self.ports: list[HostPort] = []

    def add(self, pod: PodDemand, sign: int) -> None:
        self.pods += sign
        for name, value in pod.requests.items():
            self.requested[name] = self.requested.get(name, 0) + sign * value
        for port in pod.host_ports:
            if sign > 0:
                self.ports.append(port)
            elif port in self.ports:
                self.ports.remove(port)

    def frozen(self) -> NodeUse:
        return NodeUse(dict(self.requested), self.pods, tuple(self.ports))


class KubeNodes:
    def __init__(self, *, ignored: Iterable[str] = ()) -> None:
        self.ignored = frozenset(ignored)
        """Extended resources ``NodeResourcesFit`` skips (``ignoredByScheduler``)."""
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeFacts] = {}
        self._use: dict[str, _Use] = {}
        self._pods: dict[str, PodDemand] = {}
        """Counted pods by UID (or ``namespace/name`` when a dump has no UID)."""

    @classmethod
    def of(cls, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], *,
           ignored: Iterable[str] = ()) -> KubeNodes:
        state = cls(ignored=ignored)
        state.replace_nodes(nodes)
        state.replace_pods(pods)
        return state

    # -- events ----------------------------------------------------------------------------

    def replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        facts = {f.name: f for f in map(node_facts, filter(has_node_shape, nodes)) if f.name}
        with self._lock:
            self._nodes = facts

    def node_event(self, deleted: bool, node: Mapping[str, Any]) -> None:
        """A node of a shape no API server holds (a hand-edited cluster file) is left out,
        as the inventory leaves it out (``sync/apply.py``)."""
        readable = has_node_shape(node)
        facts = node_facts(node) if readable else NodeFacts(objects.name(node), {}, ())
        with self._lock:
            if deleted or not readable:
                self._nodes.pop(facts.name, None)
            elif facts.name:
                self._nodes[facts.name] = facts

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            self._pods, self._use = {}, {}
        for pod in pods:
            self.pod_event(False, pod)

    def pod_event(self, deleted: bool, pod: Mapping[str, Any]) -> None:
        """A pod counts on its node while it is bound and not terminal; one of a shape no API
        server holds does not count (the inventory leaves it out too)."""
        readable = has_pod_shape(pod)
        demand = pod_demand(pod) if readable else PodDemand(
            f"{objects.namespace(pod)}/{objects.name(pod)}", objects.uid(pod), "", {})
        key = demand.uid or demand.key
        with self._lock:
            old = self._pods.pop(key, None)
            if old is not None:
                self._use.setdefault(old.node_name, _Use()).add(old, -1)
            if readable and not deleted and demand.node_name and not demand.terminal:
                self._pods[key] = demand
                self._use.setdefault(demand.node_name, _Use()).add(demand, +1)

    def bound(self, pod: Mapping[str, Any], node: str) -> None:
        """A pod the caller placed on ``node`` (the what-if's bind)."""
        spec = dict(objects.section(pod, "spec"))
        spec["nodeName"] = node
        self.pod_event(False, {**pod, "spec": spec})

    # -- reads -----------------------------------------------------------------------------

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._nodes)

    def facts(self, name: str) -> NodeFacts | None:
        with self._lock:
            return self._nodes.get(name)

    def use(self, name: str) -> NodeUse:
        with self._lock:
            use = self._use.get(name)
            return use.frozen() if use is not None else NodeUse({}, 0, ())

    def filter(self, pod: Mapping[str, Any], names: Sequence[str] | None = None
               ) -> KubeVerdict:
        """The nodes (all known, or ``names``) kube-scheduler's filters pass for ``pod``,
        judged as a pod to place (its own ``spec.nodeName`` is not counted on any node)."""
        demand = pod_demand(pod)
        with self._lock:
            candidates = sorted(self._nodes) if names is None else sorted(
                n for n in names if n in self._nodes)
            nodes = [self._nodes[n] for n in candidates]
            uses = [self._use_without(n, demand) for n in candidates]
        feasible: list[str] = []
        excluded: dict[str, Exclusion] = {}
        for node, use in zip(nodes, uses, strict=True):
            exclusion = first_exclusion(demand, node, use, self.ignored)
            if exclusion is None:
                feasible.append(node.name)
            else:
                excluded[node.name] = exclusion
        return KubeVerdict(feasible, excluded)

    def _use_without(self, name: str, pod: PodDemand) -> NodeUse:
        use = self._use.get(name)
        if use is None:
            return NodeUse({}, 0, ())
        counted = self._pods.get(pod.uid or pod.key)
        if counted is None or counted.node_name != name:
            return use.frozen()
        copy = _Use()
        copy.requested, copy.pods, copy.ports = dict(use.requested), use.pods, list(use.ports)
        copy.add(counted, -1)
        return copy.frozen()
