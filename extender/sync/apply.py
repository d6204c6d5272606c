"""Decoded Nodes and Pods -> inventory holdings.

Rules, in the order they are checked for a pod:

- deleted or finished (``Succeeded``/``Failed``): holds nothing any more, forgotten;
- not bound (no ``spec.nodeName``): holds nothing in the API's eyes, but a reservation or a
  Binding of ours may be in flight for it, so a live ``ASSUMED``/``BOUND`` holding is never
  dropped by such an event (it is older than our bind, or our annotation patch);
- bound, with our ``gpu-extender.io/assigned`` annotation naming that node: holds exactly that;
- bound without it (another scheduler placed it, or the annotation names another node): the
  GPUs are inferred with the core's default assignment, so their capacity is still counted; the
  inference is remembered so later events of the same pod do not move it.

Every bound pod with a valid GPU request is also reported to ``on_placed`` (the service feeds
its workload mix from it, so a restart relearns the mix from the pods already running).

One lock serializes every mutation that comes from the API (watch events of both kinds and
relists), so a relist of one kind never interleaves with an event of the other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from extender.core.assign import NoFitError, assign
from extender.core.request import PlacementRequest
from extender.inventory.store import ApplyReport, Holding, HoldingState, Inventory
from extender.kube import objects
from extender.model import Assignment, GpuRequest, NodeInfo, PodInfo
from extender.platform import Platform
from extender.sync.dra import DraApplier, DraState

_log = logging.getLogger(__name__)

DELETED = "DELETED"


NodeProblemHook = Callable[[NodeInfo, str], None]
"""Called with a decoded node that has (or no longer has) problems, and the node's UID."""


class InventoryApplier:
    def __init__(self, platform: Platform, inventory: Inventory, *,
                 on_node_problems: NodeProblemHook | None = None,
                 on_placed: Callable[[PodInfo], None] | None = None,
                 dra: DraState | None = None) -> None:
        self._on_node_problems = on_node_problems
        self._platform = platform
        self._inventory = inventory
        self.on_placed = on_placed
        """Called (under the lock) with every bound pod that has a valid GPU request."""
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeInfo] = {}
        self._inferred: dict[str, Assignment] = {}  # pod uid -> GPUs we inferred for it
        self._awaiting: dict[str, dict[str, PodInfo]] = {}  # node -> uid -> pod to infer
        self.inferred_total = 0
        self.inference_failures_total = 0
        self.dra = None if dra is None else DraApplier(
            dra, inventory, self._lock, lambda: self._nodes, self.refresh_dra)
        """The sink of the DRA watches (``sync/dra.py``); ``None``: DRA is not watched."""

    # -- nodes -------------------------------------------------------------------------------

    def node_event(self, event_type: str, node: Mapping[str, Any]) -> None:
        with self._lock:
            if event_type == DELETED:
                name = objects.name(node)
                self._nodes.pop(name, None)
                self._inventory.remove_node(name)
                return
            info = self._merge_dra(self._platform.nodes.decode(node))
            if not info.name or self._nodes.get(info.name) == info:
                return  # status heartbeats change nothing we read
            self._upsert(info)
            self._report_problems(info, node)

    def replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """Make the inventory's nodes exactly ``nodes`` (a fresh list); pods are untouched."""
        with self._lock:
            nodes = list(nodes)
            decoded = [(self._merge_dra(self._platform.nodes.decode(node)), node)
                       for node in nodes]
            infos = [info for info, _ in decoded if info.name]
            observed = [h for h in self._inventory.holdings()
                        if h.state is HoldingState.OBSERVED]
            repairs = self._inventory.replace_all(infos, observed)
            self._nodes = {info.name: info for info in infos}
            for info in infos:
                self._infer_awaiting(info.name)
            for info, node in decoded:
                if info.name:
                    self._report_problems(info, node)
            return repairs

    def _merge_dra(self, info: NodeInfo) -> NodeInfo:
        return info if self.dra is None else self.dra.state.merge(info)

    def refresh_dra(self, name: str) -> None:
        """The node's DRA devices changed (called by ``self.dra`` under the lock)."""
        info = self._nodes.get(name)
        if info is None:
            return
        merged = self._merge_dra(info)
        if merged == info:
            return
        self._upsert(merged)
        if merged.dra:  # pods seen before the slices: their GPUs are the claims' now
            for holding in self._inventory.holdings():
                if holding.node == name and holding.state is HoldingState.OBSERVED and \
                        holding.assignment is not None and \
                        not (self.dra and holding.key.uid in self.dra.state.claims):
                    self._inventory.observe(replace(holding, assignment=None))

    def _on_dra_node(self, info: PodInfo) -> bool:
        """Claims hold the GPUs of a pod on a DRA-managed node, not the pod."""
        node = self._nodes.get(info.node_name)
        return node is not None and node.dra

    def _report_problems(self, info: NodeInfo, node: Mapping[str, Any]) -> None:
        if self._on_node_problems is not None:
            self._on_node_problems(info, str((node.get("metadata") or {}).get("uid") or ""))

    def _upsert(self, info: NodeInfo) -> None:
        report = self._inventory.upsert_node(info)
        self._nodes[info.name] = info
        _log_conflicts(report, f"node {info.name}")
        for problem in info.problems:
            _log.warning("node problem", extra={"fields": {"node": info.name,
                                                             "problem": problem}})
        self._infer_awaiting(info.name)

    # -- pods --------------------------------------------------------------------------------

    def pod_event(self, event_type: str, pod: Mapping[str, Any]) -> None:
        with self._lock:
            if event_type == DELETED:
                self._remove_pod(objects.uid(pod))
                return
            info = self._platform.pods.decode(pod)
            if not info.key.uid:
                return
            if info.terminal:
                self._remove_pod(info.key.uid)
            elif not info.node_name:
                current = self._inventory.holding(info.key.uid)
                if current is not None and current.state is HoldingState.OBSERVED:
                    self._remove_pod(info.key.uid)  # unbound again: only a recreated pod does that
            else:
                holding = self._holding(info)
                _log_conflicts(self._inventory.observe(holding), f"pod {info.key}")
                self._placed(info)

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """Make the observed holdings exactly those of ``pods`` (a fresh list); reservations
        and Bindings in flight are kept (``Inventory.replace_all``)."""
        with self._lock:
            holdings: list[Holding] = []
            to_infer: list[PodInfo] = []
            live: set[str] = set()
            for info in map(self._platform.pods.decode, pods):
                if not info.key.uid or info.terminal or not info.node_name:
                    continue
                live.add(info.key.uid)
                self._placed(info)
                assignment = _own_assignment(info)
                if self._on_dra_node(info):
                    holdings.append(_holding_of(info, None))
                    continue
                if assignment is None and info.request is not None:
                    known = self._inferred.get(info.key.uid)
                    if known is not None and known.node == info.node_name:
                        assignment = known
                    else:
                        to_infer.append(info)
                holdings.append(_holding_of(info, assignment))
            if self.dra is not None:
                holdings += self.dra.holdings()
            self._inferred = {uid: a for uid, a in self._inferred.items() if uid in live}
            self._awaiting = {}
            repairs = self._inventory.replace_all(list(self._nodes.values()), holdings)
            # One at a time: each inference must see the GPUs the previous one took.
            for info in to_infer:
                _log_conflicts(self._inventory.observe(self._holding(info)), f"pod {info.key}")
            return repairs

    def _placed(self, info: PodInfo) -> None:
        if self.on_placed is not None and info.request is not None:
            self.on_placed(info)

    def _holding(self, info: PodInfo) -> Holding:
        if self._on_dra_node(info):
            return _holding_of(info, None)
        assignment = _own_assignment(info)
        if assignment is None and info.request is not None:
            assignment = self._infer(info)
        return _holding_of(info, assignment)

    def _infer(self, info: PodInfo) -> Assignment | None:
        uid = info.key.uid
        known = self._inferred.get(uid)
        if known is not None and known.node == info.node_name:
            return known
        current = self._inventory.holding(uid)
        if current is not None and current.state is not HoldingState.OBSERVED:
            self._inventory.forget(uid)  # our own reservation must not hide its GPUs
        snapshot = self._inventory.snapshot()
        row = snapshot.node_index.get(info.node_name)
        if row is None:
            self._awaiting.setdefault(info.node_name, {})[uid] = info
            return None
        assert info.request is not None
        try:
            assignment = assign(snapshot, self._anywhere(info.request, info), row)
        except NoFitError as exc:
            self.inference_failures_total += 1
            _log.warning("GPUs of a pod bound elsewhere not counted", extra={"fields": {
                "pod": str(info.key), "node": info.node_name, "reason": str(exc)}})
            return None
        self.inferred_total += 1
        self._inferred[uid] = assignment
        return assignment

    def _anywhere(self, request: GpuRequest, info: PodInfo) -> PlacementRequest:
        """The pod is already there: any type, protected or not, may be what it took."""
        catalog = self._platform.catalog
        everything = np.ones(len(catalog) + 1, dtype=bool)
        everything.flags.writeable = False
        mig_index = catalog.mig.index.get(request.mig_profile, -1) \
            if request.mig_profile else -1
        untyped = replace(request, types=None, excluded=frozenset())
        return PlacementRequest(untyped, info.key.namespace, everything, everything, mig_index,
                                info.cpu_milli, info.memory_mib)

    def _infer_awaiting(self, node: str) -> None:
        for info in self._awaiting.pop(node, {}).values():
            if self._inventory.holding(info.key.uid) is not None:
                _log_conflicts(self._inventory.observe(self._holding(info)),
                               f"pod {info.key}")

    def _remove_pod(self, uid: str) -> None:
        if not uid:
            return
        self._inventory.remove_pod(uid)
        self._inferred.pop(uid, None)
        for waiting in self._awaiting.values():
            waiting.pop(uid, None)


def _own_assignment(info: PodInfo) -> Assignment | None:
    """Our annotation, if it describes where the pod actually is."""
    assignment = info.assignment
    if assignment is not None and assignment.node == info.node_name:
        return assignment
    return None


def _holding_of(info: PodInfo, assignment: Assignment | None) -> Holding:
    return Holding(info.key, info.node_name, assignment, info.cpu_milli, info.memory_mib)


def _log_conflicts(report: ApplyReport, subject: str) -> None:
    for conflict in report.conflicts:
        _log.warning("observed state over-commits a GPU", extra={"fields": {
            "subject": subject, "conflict": conflict}})
