"""Decoded Nodes and Pods -> inventory holdings.

Rules, in the order they are checked for a pod:

- deleted or finished (``Succeeded``/``Failed``): holds nothing any more, forgotten;
- not bound (no ``spec.nodeName``): holds nothing in the API's eyes, but a reservation or a
  Binding of ours may be in flight for it, so a live ``ASSUMED``/``BOUND`` holding is never
  dropped by such an event (it is older than our bind, or our annotation patch);
- bound, with an assignment the books trust (``sync/trust.py``: the first ``assigned`` of the
  UID, or a consistent ``assigned-observed`` correction, matching the pod's own request) naming
  that node: holds exactly that;
- bound without one (another scheduler placed it, the annotation names another node, or what it
  says does not match the pod's request): the GPUs are inferred with the core's default
  assignment, so their capacity is still counted; the inference is remembered so later events
  of the same pod do not move it. A pod that asks for no GPU holds none, whatever it claims.

Every object is shape-checked (``kube.shape``) before it is decoded, like at the HTTP verbs; one
object that cannot be read or applied is logged and counted (``bad_objects_total``) and never
stops a list, a relist or a node update.

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
from extender.kube.pod_content import PodInfoMemo
from extender.kube.shape import check_node
from extender.model import Assignment, GpuRequest, NodeInfo, PodInfo
from extender.platform import Platform
from extender.sync.dra import DraApplier, DraState
from extender.sync.echo import UnboundPods
from extender.sync.pod_facts import PodFacts
from extender.sync.status_reports import SeenPods
from extender.sync.trust import Claims, claims_of, invalid_request, mismatch, same_amounts

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
        self._claims: dict[str, Claims] = {}  # uid -> its annotations (bound pods, this event)
        self._written: dict[str, Assignment] = {}  # uid -> the first ``assigned`` kept
        self._preset: dict[str, str] = {}  # uid -> assigned-observed seen before it was bound
        self.inferred_total = 0
        self.inference_failures_total = 0
        self.untrusted_total = 0
        """Assignment annotations not counted (changed, pre-set, or not the pod's request)."""
        self.bad_objects_total = 0
        """Objects of a list or event that could not be read or applied (skipped)."""
        self.unbound = UnboundPods()
        """The pending pods' last unbound version: a Binding's echo is read from it
        (``sync/echo.py``)."""
        self.seen = SeenPods()
        """The bound pods' last decode: a status report reuses it
        (``sync/status_reports.py``)."""
        self.decoded = PodInfoMemo(platform.pods)
        """The decode of every other pod, by content: a burst's pending replicas decode
        once (``kube/pod_content.py``)."""
        self.pod_facts = PodFacts()
        """Priority, age and shields of every bound pod (for the preemption verb)."""
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
            info = self._decode_node(node)
            if info is None or not info.name or self._nodes.get(info.name) == info:
                return  # status heartbeats change nothing we read
            self._upsert(info)
            self._report_problems(info, node)

    def replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """Make the inventory's nodes exactly ``nodes`` (a fresh list); pods are untouched."""
        with self._lock:
            decoded = [(info, node) for node in nodes
                       if (info := self._decode_node(node)) is not None]
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

    def _decode_node(self, node: Mapping[str, Any]) -> NodeInfo | None:
        """The node decoded behind the shape check; ``None`` (logged, counted) if unreadable."""
        try:
            check_node(node)
            return self._merge_dra(self._platform.nodes.decode(node))
        except Exception as exc:  # one bad object must not stop a list
            self._bad("node", objects.name(node), exc)
            return None

    def _bad(self, kind: str, name: str, exc: Exception) -> None:
        self.bad_objects_total += 1
        _log.warning("object not applied", extra={"fields": {
            "kind": kind, "name": name, "error": f"{type(exc).__name__}: {exc}"}})

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
            self._on_node_problems(info, objects.uid(node))

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
                self.pod_facts.remove(objects.uid(pod))
                return
            self.pod_facts.observe(pod)
            bound = bool(objects.node_name(pod))
            echo = self.unbound.bound(pod) if bound else None
            seen = self.seen.lookup(pod) if bound and echo is None else None
            if echo is not None:
                info = echo.info
            elif seen is not None and seen.info is not None:
                info = seen.info
            else:
                info = self.decoded.decode(pod)
            if not info.key.uid:
                return
            if info.terminal:
                self._remove_pod(info.key.uid)
            elif not info.node_name:
                self._remember_preset(info.key.uid, pod)
                current = self._inventory.holding(info.key.uid)
                if current is not None and current.state is HoldingState.OBSERVED:
                    self._remove_pod(info.key.uid)  # unbound again: only a recreated pod does that
                self.seen.forget(info.key.uid)
                self.unbound.keep(pod, info)
            else:
                if seen is not None and seen.claims is not None:
                    claims = seen.claims
                else:
                    claims = echo.claims if echo is not None and echo.claims is not None \
                        else claims_of(objects.annotations(pod))
                    self.seen.keep(seen.digest if seen is not None else
                                   self.seen.digest(pod), info, claims)
                self._claims[info.key.uid] = claims
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
            pods = list(pods)
            self.pod_facts.replace_all(pods)
            preset, self._preset = self._preset, {}
            self.unbound.clear()
            self.seen.clear()
            for pod in pods:
                try:
                    info = self.decoded.decode(pod)
                except Exception as exc:  # one bad object must not stop a list
                    self._bad("pod", objects.name(pod), exc)
                    continue
                if not info.key.uid or info.terminal:
                    continue
                if not info.node_name:
                    self.unbound.keep(pod, info)
                    self._remember_preset(info.key.uid, pod)
                    continue
                live.add(info.key.uid)
                if info.key.uid in preset:
                    self._preset[info.key.uid] = preset[info.key.uid]
                self._placed(info)
                self._claims[info.key.uid] = claims_of(objects.annotations(pod))
                if self._on_dra_node(info):
                    holdings.append(_holding_of(info, None))
                    continue
                assignment = self._counted(info)
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
            self._written = {uid: a for uid, a in self._written.items() if uid in live}
            self._claims = {uid: c for uid, c in self._claims.items() if uid in live}
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
        assignment = self._counted(info)
        if assignment is None and info.request is not None:
            assignment = self._infer(info)
        return _holding_of(info, assignment)

    # -- what the books trust (sync/trust.py) ------------------------------------------------

    def _remember_preset(self, uid: str, pod: Mapping[str, Any]) -> None:
        text = claims_of(objects.annotations(pod)).observed_text
        if text is not None:
            self._preset[uid] = text

    def _counted(self, info: PodInfo) -> Assignment | None:
        """The assignment of a bound pod that the books count (``None``: none to trust)."""
        uid, node = info.key.uid, info.node_name
        claims = self._claims.get(uid) or Claims(None, None, None)
        known = self._nodes.get(node)
        first = self._written.get(uid)
        if first is None or first.node != node:
            first = self._first_assigned(info, claims, known)
        elif claims.assigned is not None and claims.assigned != first:
            self._untrusted(info, "gpu-extender.io/assigned changed after the extender wrote "
                                  "it; the change is ignored")
        observed = claims.observed
        if observed is None or observed.node != node:
            return first
        why = None
        if claims.observed_text == self._preset.get(uid):
            why = "it was set before the pod was bound (not by the node agent)"
        elif first is not None and not same_amounts(observed, first):
            why = "its amounts differ from the assignment the extender wrote"
        elif first is not None and invalid_request(info):
            why = None  # same amounts as what the pod holds: the devices moved
        else:  # and always against the request (a whole GPU's VRAM is that GPU's)
            why = mismatch(observed, info.request, known)
        if why is not None:
            self._untrusted(info, f"gpu-extender.io/assigned-observed not counted: {why}")
            return first
        return observed

    def _first_assigned(self, info: PodInfo, claims: Claims,
                        known: NodeInfo | None) -> Assignment | None:
        """The pod's first assignment on its node: our own Binding's (a ``BOUND`` holding),
        else its ``assigned`` annotation, if either matches the pod's request."""
        held = self._inventory.holding(info.key.uid)
        candidate = claims.assigned
        if held is not None and held.state is HoldingState.BOUND and \
                held.node == info.node_name and held.assignment is not None:
            candidate = held.assignment
        if candidate is None or candidate.node != info.node_name:
            return None
        why = None if invalid_request(info) else mismatch(candidate, info.request, known)
        if why is not None:
            self._untrusted(info, f"gpu-extender.io/assigned not counted: {why}")
            return None
        self._written[info.key.uid] = candidate
        return candidate

    def _untrusted(self, info: PodInfo, why: str) -> None:
        self.untrusted_total += 1
        _log.warning("assignment annotation not trusted", extra={"fields": {
            "pod": str(info.key), "node": info.node_name, "reason": why}})

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
        self._written.pop(uid, None)
        self._claims.pop(uid, None)
        self._preset.pop(uid, None)
        self.unbound.forget(uid)
        self.seen.forget(uid)
        for waiting in self._awaiting.values():
            waiting.pop(uid, None)


def _holding_of(info: PodInfo, assignment: Assignment | None) -> Holding:
    return Holding(info.key, info.node_name, assignment, info.cpu_milli, info.memory_mib)


def _log_conflicts(report: ApplyReport, subject: str) -> None:
    for conflict in report.conflicts:
        _log.warning("observed state over-commits a GPU", extra={"fields": {
            "subject": subject, "conflict": conflict}})
