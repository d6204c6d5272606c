"""One reconcile pass, and the loop that runs it (one thread, owned here, with a stop).

A pass: the pods that fit nowhere now (``pending``) -> their needs on the offered types
(``offers``) -> the plan (``pack``) -> the objects wanted (``emit``) -> against the ones listed
from the API (``decide``) -> deletions, then creations, and a ``GpuDemandRequested`` event on
every real pod a created object serves (once per object: the event path aggregates repeats).
With ``dry_run`` nothing is written: the report says what would be.

The loop reconciles every ``interval_s`` once the view is synced and, with a ``LeaderLease``,
only while this replica leads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.apiserver.demand_objects import DemandObjectApi
from extender.apiserver.errors import Conflict, KubeError
from extender.apiserver.events import EventQueue, PendingEvent
from extender.config.demand import DemandConfig, DemandMode
from extender.demand.decide import Action, Existing, Rule, decide, existing_of
from extender.demand.emit import DemandObject, Emitter, Kind
from extender.demand.labels import SELECTOR
from extender.demand.metrics import DemandMetrics
from extender.demand.offers import need_of, offers
from extender.demand.pack import Plan, pack
from extender.demand.pending import PendingJudge, PodWait, Waiting
from extender.demand.view import DemandView, PodsState
from extender.kube import objects
from extender.model import PodKey
from extender.platform import Platform
from extender.scheduling.scheduler import Scheduler
from extender.sync.leader import LeaderLease

_log = logging.getLogger(__name__)

EVENT_REASON = "GpuDemandRequested"


@dataclass(frozen=True)
class Report:
    """What one pass saw and did."""

    waits: tuple[PodWait, ...]
    plan: Plan
    actions: tuple[Action, ...]
    errors: tuple[str, ...] = ()
    dry_run: bool = False

    def counts(self) -> Counter[str]:
        return Counter(w.waiting.value for w in self.waits)

    @property
    def wanted(self) -> tuple[DemandObject, ...]:
        """The objects created (or, dry, to be created)."""
        return tuple(a.wanted for a in self.actions
                     if a.rule is Rule.CREATE and a.wanted is not None)


@dataclass
class Reconciler:
    platform: Platform
    config: DemandConfig
    view: DemandView
    scheduler: Scheduler
    api: DemandObjectApi
    emitter: Emitter
    schedulers: Collection[str]
    metrics: DemandMetrics = field(default_factory=DemandMetrics)
    events: EventQueue | None = None
    clock: Callable[[], float] = time.time
    bound_at: dict[tuple[str, str], float] = field(default_factory=dict)
    """Utility pods this process deleted as bound, and when (the loop's memory)."""

    @property
    def namespace(self) -> str:
        return self.emitter.namespace

    def _kinds(self) -> tuple[Kind, ...]:
        if self.config.mode is DemandMode.PROVISIONING_REQUEST:
            return (Kind.POD, Kind.POD_TEMPLATE, Kind.PROVISIONING_REQUEST)
        return (Kind.POD,)  # the ProvisioningRequest CRD may not be installed

    def existing(self) -> list[Existing]:
        return [existing_of(kind, obj) for kind in self._kinds()
                for obj in self.api.list_demand(kind.value, self.namespace, SELECTOR)]

    def plan(self, state: PodsState) -> tuple[list[PodWait], Plan]:
        judge = PendingJudge(self.platform, self.scheduler, self.view.kube, self.schedulers,
                             debounce_s=self.config.debounce_seconds, clock=self.clock)
        waits = judge.waiting(state.unbound)
        nodes = self.scheduler.inventory.snapshot().nodes
        offered = offers(self.platform, self.config, nodes)
        needs = [need_of(self.platform, w.info, offered, nodes) for w in waits
                 if w.waiting is Waiting.DEMAND and w.info is not None]
        return waits, pack([n for n in needs if n is not None], offered.values())

    def reconcile(self, *, dry_run: bool = False) -> Report:
        state = self.view.state()
        waits, plan = self.plan(state)
        emitted = self.emitter.objects(plan)
        wanted = list(emitted.objects)
        if emitted.unmapped:
            plan = Plan(plan.nodes, plan.unserved + emitted.unmapped)
        try:
            existing = self.existing()
        except KubeError as exc:
            self.metrics.errors.inc()
            return Report(tuple(waits), plan, (), (str(exc),), dry_run)
        now = self.clock()
        cooldown = self.config.cooldown_seconds
        for key in [k for k, at in self.bound_at.items() if now - at >= cooldown]:
            del self.bound_at[key]
        actions = decide(wanted, existing, bound=state.bound, present=state.present, now=now,
                         cooldown_s=cooldown, held=self.bound_at.keys())
        errors = [] if dry_run else self._apply(actions, state.unbound)
        self._count(plan, existing, actions, dry_run=dry_run)
        return Report(tuple(waits), plan, tuple(actions), tuple(errors), dry_run)

    def _apply(self, actions: list[Action], unbound: Iterable[Mapping[str, Any]]
               ) -> list[str]:
        uids = {str(objects.pod_key(p)): objects.uid(p) for p in unbound}
        errors: list[str] = []
        # a ProvisioningRequest before its PodTemplate, a PodTemplate before its request
        for action in sorted((a for a in actions if a.rule.deletes),
                             key=lambda a: a.kind is Kind.POD_TEMPLATE):
            try:
                self.api.delete_demand(action.kind.value, self.namespace, action.name)
                self.metrics.deleted.labels(action.rule.value).inc()
                if action.rule is Rule.BOUND:
                    self.bound_at[(action.kind.value, action.name)] = self.clock()
                _log.info("demand deleted", extra={"fields": {
                    "kind": action.kind.value, "name": action.name, "why": action.rule.value}})
            except KubeError as exc:
                errors.append(str(exc))
        for action in sorted((a for a in actions if a.rule is Rule.CREATE),
                             key=lambda a: a.kind is not Kind.POD_TEMPLATE):
            assert action.wanted is not None
            try:
                self.api.create_demand(action.kind.value, self.namespace, action.wanted.body)
            except Conflict:
                continue  # already there (another pass, a --once beside the loop): idempotent
            except KubeError as exc:
                errors.append(str(exc))
                continue
            self.metrics.created.labels(action.kind.value).inc()
            _log.info("demand created", extra={"fields": {
                "kind": action.kind.value, "name": action.name,
                "pods": ",".join(action.wanted.pods)}})
            if action.kind is not Kind.POD_TEMPLATE:
                self._announce(action.wanted, action.wanted.pods, uids)
        for action in (a for a in actions if a.rule is Rule.REFRESH):
            assert action.wanted is not None
            annotations = objects.annotations(action.wanted.body)
            try:
                self.api.annotate_demand(action.kind.value, self.namespace, action.name,
                                         {k: str(v) for k, v in annotations.items()})
            except KubeError as exc:
                errors.append(str(exc))
                continue
            if action.kind is not Kind.POD_TEMPLATE:
                self._announce(action.wanted, action.added, uids)
        if errors:
            self.metrics.errors.inc(len(errors))
        return errors

    def _announce(self, wanted: DemandObject, pods: tuple[str, ...],
                  uids: dict[str, str]) -> None:
        if self.events is None:
            return
        plural = "s" if wanted.nodes != 1 else ""
        message = (f"waiting for {wanted.nodes} x {wanted.type_id} node{plural} requested via "
                   f"{wanted.via(self.namespace)}")
        for pod in pods:
            namespace, _, name = pod.partition("/")
            self.events.submit(PendingEvent(PodKey(namespace, name, uids.get(pod, "")),
                                            EVENT_REASON, "Normal", message))

    def _count(self, plan: Plan, existing: list[Existing], actions: list[Action], *,
               dry_run: bool) -> None:
        self.metrics.reconciles.inc()
        served = {p for node in plan.nodes for p in node.pods}
        self.metrics.waiting.set(len(served))
        self.metrics.unserved.set(len(plan.unserved))
        if dry_run:
            return
        gone = {(a.kind.value, a.name) for a in actions if a.rule.deletes}
        now: Counter[tuple[str, str]] = Counter(
            (e.type_id, e.kind.value) for e in existing if e.key not in gone)
        now.update((a.type_id, a.kind.value) for a in actions if a.rule is Rule.CREATE)
        self.metrics.set_objects((t, k, n) for (t, k), n in now.items())


class DemandLoop:
    """Runs ``reconciler.reconcile`` every ``interval_s`` from one thread, and at once when
    ``wake`` is set (a utility pod bound); ``stop`` ends it."""

    def __init__(self, reconciler: Reconciler, *, interval_s: float,
                 synced: Callable[[], bool], leader: LeaderLease | None = None,
                 wake: threading.Event | None = None) -> None:
        self._reconciler = reconciler
        self._interval = interval_s
        self._synced = synced
        self._leader = leader
        self._stop = threading.Event()
        self._wake = wake or threading.Event()
        self._thread = threading.Thread(target=self._run, name="demand-reconcile",
                                        daemon=True)
        self.last: Report | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            if not self._synced():
                continue
            if self._leader is not None and not self._leader.leading():
                continue
            try:
                self.last = self._reconciler.reconcile()
            except Exception:  # one bad pass must not end the loop; logged, counted
                self._reconciler.metrics.errors.inc()
                _log.exception("demand reconcile failed")
