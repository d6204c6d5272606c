"""Bind: re-check, pin, persist, bind; forget the hold when the Binding was refused.

A bind that ended without an answer (a timeout, a reset connection, a 5xx: the Binding may well
exist) does not forget: the hold gets its TTL back (``Inventory.unpin``), so the GPUs stay held
until the watch shows the pod bound (``OBSERVED``) or the TTL passes. A pod the inventory holds
``BOUND``/``OBSERVED`` is answered from that holding: on its node "already bound" is a success,
anywhere else a refusal, and neither forgets it.

kube-scheduler binds in one goroutine per pod, so binds arrive concurrently. The decision (is
the pod's assumed hold on the chosen node? if not, which GPUs there?) and the inventory write
(``pin`` of the hold prioritize assumed, or a strict ``assume`` of a fresh choice) happen under
one lock, so two binds can never take the same whole GPU or more VRAM than a GPU has; the API
calls (annotate, Binding) run outside it, protected by the hold, so slow API round trips of
different pods overlap.

A fresh choice fits the node again under the lock (``assign`` without the row's fit in hand):
the snapshot is newer than any fit the cycle holds, and another pod's bind may just have taken
the GPUs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from extender.apiserver.errors import KubeError, Unavailable
from extender.core.assign import NoFitError, assign
from extender.errors import CapacityError, ExtenderError, UnknownNodeError
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import HoldingState, Inventory
from extender.model import Assignment, PodKey, RequestKind
from extender.scheduling.cycle import CycleTable, PodCycle
from extender.scheduling.dra_bind import DraBind
from extender.scheduling.handoff import Handoff, HandoffPools, handoff_annotations
from extender.scheduling.mix import PlacedPods
from extender.scheduling.outcome import Decision
from extender.scheduling.ports import BindWriter, ClaimReader, PodReader

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BindOutcome:
    decision: Decision
    error: str = ""
    """The message for kube-scheduler ('' on success)."""


class _RefusedError(ExtenderError):
    def __init__(self, message: str, decision: Decision) -> None:
        self.decision = decision
        super().__init__(message)


class _Backing(Enum):
    """What backs the GPUs the bind goes ahead with."""

    NOTHING = "nothing"
    """The pod holds no GPU: bound like the default binder would."""
    OUR_HOLD = "our hold"
    """A hold of ours (pinned or assumed here): forgotten if the bind fails."""
    ALREADY_BOUND = "already bound"
    """A retried bind: the pod is bound (or observed) on that node already."""


@dataclass(frozen=True)
class _Decision:
    assignment: Assignment | None
    backing: _Backing
    chosen_on: ClusterSnapshot | None = None
    """The snapshot a fresh choice was made on (before its own hold)."""


Announce = Callable[[PodCycle, PodKey, str, "Assignment | None", "ClusterSnapshot | None"],
                   None]
"""Told of every new placement after its Binding (the Normal event and the log line), with
the snapshot a fresh choice was made on (``None``: the GPUs prioritize held); must not
raise."""


class Bind:
    def __init__(self, inventory: Inventory, cycles: CycleTable, binder: BindWriter,
                 api: PodReader, placed: PlacedPods, *,
                 announce: Announce | None = None, unanswered_ttl: float = 30.0,
                 handoff: HandoffPools | None = None,
                 claims: ClaimReader | None = None) -> None:
        """``unanswered_ttl``: how long the GPUs of a bind that got no answer stay held
        without the watch confirming them (the reservation TTL); ``claims`` reads a DRA pod's
        claim (``None``: offline, no DRA)."""
        self._inventory = inventory
        self._cycles = cycles
        self._binder = binder
        self._api = api
        self._placed = placed
        self._announce = announce
        self._unanswered_ttl = unanswered_ttl
        self._handoff = handoff
        self._lock = threading.Lock()
        self._dra = DraBind(inventory, api, claims)

    def __call__(self, key: PodKey, node: str) -> BindOutcome:
        try:
            # Looked up before taking the lock: an API round trip (after a restart the pod
            # is not cached) must not hold up the other binds.
            cycle = self._cycle(key)
            dra_node = self._dra.node(node)
            if dra_node is not None and cycle.pod.request is not None and \
                    cycle.pod.request.kind is RequestKind.WHOLE:
                # DRA allocated the devices in PreBind: read them, hold nothing of ours
                assignment = self._dra.devices(key, dra_node)
                with self._lock:
                    decision = self._decide_dra(key, node, cycle, assignment)
            else:
                with self._lock:
                    decision = self._decide(key, node, cycle)
        except _RefusedError as exc:
            self._binder.warn(key, "GpuBindRefused", str(exc))
            return BindOutcome(exc.decision, str(exc))
        except KubeError as exc:  # looking the pod up failed
            return BindOutcome(Decision.API_ERROR, f"cannot read pod {key}: {exc}")
        ours = decision.backing is _Backing.OUR_HOLD
        completed = False
        unanswered = False
        handoff = self._handoff_for(cycle, node, decision.assignment)
        try:
            self._binder.bind(key, node, decision.assignment, handoff.annotations)
            completed = True
        except KubeError as exc:
            unanswered = _unanswered(exc)
            _log.warning("bind failed", extra={"fields": {"pod": str(key), "node": node,
                                                           "error": str(exc)}})
            self._binder.warn(key, "GpuBindFailed", f"binding to {node} failed: {exc}")
            return BindOutcome(Decision.API_ERROR, f"binding {key} to {node} failed: {exc}")
        finally:
            if not completed and ours and not (
                    unanswered and self._inventory.unpin(key.uid, self._unanswered_ttl)):
                self._inventory.forget(key.uid)
        self._inventory.finish_binding(key.uid)
        pod = cycle.pod
        if pod.request is not None:
            self._placed.placed(key.uid, pod.request, pod.cpu_milli, pod.memory_mib)
        if decision.backing is _Backing.ALREADY_BOUND:
            return BindOutcome(Decision.ALREADY_BOUND)
        if handoff.unknown_uuid:
            self._binder.warn(key, "GpuUuidUnknown", (
                f"node {node} publishes no UUID for GPU(s) "
                f"{list(decision.assignment.gpu_indices) if decision.assignment else []}: the "
                "CDI annotation names the index (nvidia.com/gpu=<index>); run the gpu-extender "
                "node agent there so the UUID is named"))
        if handoff.too_long:
            self._binder.warn(key, "GpuHandoffSkipped", (
                f"container(s) {', '.join(handoff.too_long)}: a name longer than 53 characters "
                "does not fit an annotation key nvidia.cdi.k8s.io/container.<name>, so no CDI "
                "handoff was written for it (shorten the container name)"))
        if self._announce is not None:
            self._announce(cycle, key, node, decision.assignment, decision.chosen_on)
        return BindOutcome(Decision.BOUND)

    def _handoff_for(self, cycle: PodCycle, node: str,
                     assignment: Assignment | None) -> Handoff:
        """The CDI annotations of a share pod on a ``cdi`` pool (docs/handoff.md)."""
        if self._handoff is None or assignment is None:
            return Handoff({})
        mode = self._handoff.mode(self._inventory.snapshot(), node)
        return handoff_annotations(assignment, cycle.pod.share_containers, mode)

    def _decide(self, key: PodKey, node: str, cycle: PodCycle) -> _Decision:
        # A BOUND/OBSERVED holding is answered from (never replaced): see holds.py.
        pod = cycle.pod
        holding = self._inventory.holding(key.uid)
        if holding is not None and holding.state is not HoldingState.ASSUMED:
            if holding.node == node:
                return _Decision(holding.assignment, _Backing.ALREADY_BOUND)
            raise _RefusedError(f"pod {key} is already bound to node {holding.node}",
                           Decision.REFUSED)
        if pod.request is None:
            if pod.error is not None:
                raise _RefusedError(pod.error, Decision.INVALID_REQUEST)
            return _Decision(None, _Backing.NOTHING)
        # Keep the GPUs prioritize chose, and pin them (no TTL) while the bind runs. The pin
        # fails if the hold expired just now and was swept: choose again.
        if holding is not None and holding.node == node and holding.assignment is not None \
                and self._inventory.pin(key.uid, holding.assignment):
            return _Decision(holding.assignment, _Backing.OUR_HOLD)
        holding = self._inventory.holding(key.uid)
        if holding is not None:
            self._inventory.forget(key.uid)  # held elsewhere: kube chose another node
            cycle.held = None
        assert pod.placement is not None
        # A prioritize of another pod may assume between our snapshot and our assume (it does
        # not take this lock): the strict assume notices, and one more look settles it.
        for attempt in range(2):
            snapshot = self._inventory.snapshot()
            row = snapshot.node_index.get(node)
            if row is None:
                raise _RefusedError(f"node {node} is not in the GPU inventory", Decision.REFUSED)
            try:
                assignment = assign(snapshot, pod.placement, row)
                self._inventory.assume(key, assignment, cpu_milli=pod.cpu_milli,
                                       memory_mib=pod.memory_mib, ttl=None)
                cycle.held = assignment
                return _Decision(assignment, _Backing.OUR_HOLD, snapshot)
            except (NoFitError, CapacityError, UnknownNodeError) as exc:
                if attempt == 1 or isinstance(exc, NoFitError):
                    raise _RefusedError(f"no longer fits on {node}: {exc}",
                                   Decision.CONFLICT) from exc
        raise AssertionError("unreachable")

    def _decide_dra(self, key: PodKey, node: str, cycle: PodCycle,
                    assignment: Assignment | None) -> _Decision:
        """The pod's GPUs are its claim's (``sync/dra.py`` holds them): the pod holds its
        CPU and memory only, and the Binding records the devices DRA allocated."""
        holding = self._inventory.holding(key.uid)
        if holding is not None and holding.state is not HoldingState.ASSUMED:
            if holding.node == node:
                return _Decision(assignment, _Backing.ALREADY_BOUND)
            raise _RefusedError(f"pod {key} is already bound to node {holding.node}",
                                Decision.REFUSED)
        self._inventory.forget(key.uid)
        cycle.held = None
        pod = cycle.pod
        self._inventory.assume(key, Assignment(node, RequestKind.WHOLE, ()),
                               cpu_milli=pod.cpu_milli, memory_mib=pod.memory_mib, ttl=None)
        return _Decision(assignment, _Backing.OUR_HOLD)

    def _cycle(self, key: PodKey) -> PodCycle:
        """The pod's cycle as filter started it, else one started from the API's pod."""
        known = self._cycles.get(key.uid)
        if known is not None and known.pod.key == key:
            return known
        cycle = self._cycles.cycle(self._api.get_pod(key.namespace, key.name))
        if cycle.pod.key.uid != key.uid:
            raise _RefusedError(f"pod {key} was recreated (uid {cycle.pod.key.uid}, expected "
                           f"{key.uid})", Decision.REFUSED)
        return cycle


def _unanswered(exc: KubeError) -> bool:
    """Whether the Binding may exist after all: no answer (``status`` ``None``) or a 5xx."""
    return isinstance(exc, Unavailable) or exc.status is None or exc.status >= 500
