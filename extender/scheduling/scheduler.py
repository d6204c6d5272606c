"""The scheduling cycle's composition: one object per service, the three steps over shared
per-pod cycles.

Lock order (a lock may be held while taking the ones after it, never the reverse):

- a one-node answer's hold (``deferred_hold.py``): ``DeferredHold._lock`` -> what
  ``Prioritize.hold_cut`` takes; every verb runs it before taking any other lock;
- bind: ``Bind._lock`` -> ``Inventory._lock`` (an RLock); the API calls run after both;
- prioritize, explain and the warm after an answer (``warm.py``): ``Scorer._lock`` ->
  ``RowCache._lock`` and ``WorkloadMix._lock`` (the strategy reads its row cache and the
  mix; scoring ahead also fits the node list under ``Scorer._lock``: ``FitCache``'s
  ``RowCache._lock``);
- sync: ``InventoryApplier._lock`` -> ``Inventory._lock``, and -> ``PlacedPods._lock``, then
  ``WorkloadMix._lock`` (``on_placed``); offline, ``OfflineCluster._lock`` is released before
  it calls the applier;
- ``CycleTable._lock`` and ``PlacedPods._lock`` are leaves: nothing is called while they are
  held (``on_new_pod`` and ``WorkloadMix.observe`` run after they are released).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.core.scoring.base import ScoreResult
from extender.core.workload import WorkloadMix
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import HoldingState, Inventory
from extender.kube import objects
from extender.kube.annotations import decode_assignment
from extender.model import ANNOTATION_ASSIGNED, Assignment, PodInfo
from extender.platform import Platform
from extender.scheduling.bind import Bind, BindOutcome
from extender.scheduling.cut import CutFacts, ScoreCut
from extender.scheduling.cycle import CycleTable, HoldEvents, PodCycle
from extender.scheduling.deferred_hold import DeferredHold
from extender.scheduling.evaluate import Evaluation, Evaluator
from extender.scheduling.expiry import Expiry
from extender.scheduling.explain import Announcer, PlacementBreakdown, PlacementRecords
from extender.scheduling.filter import Filter
from extender.scheduling.mix import PlacedPods
from extender.scheduling.place import Placement, place
from extender.scheduling.ports import BindWriter, ClaimReader, PodReader
from extender.scheduling.prioritize import Prioritize, Scorer
from extender.scheduling.warm import Warmer


@dataclass(frozen=True, eq=False)
class BoundPlacement:
    """Where a bound pod is: its assignment (``None``: it holds no GPU) and, if this process
    bound it, the breakdown recorded at bind."""

    node: str
    assignment: Assignment | None
    source: str
    """``inventory`` (the holding), ``annotation`` (the pod's assigned annotation) or
    ``spec.nodeName`` (neither: a pod without GPUs, or bound by another scheduler)."""
    breakdown: PlacementBreakdown | None


@dataclass(frozen=True, eq=False)
class Explanation:
    """Everything ``explain`` shows, computed without a trace (no cycle kept, no hold). A
    bound pod is not judged again (``bound``); a pending one is, on ``names``."""

    cycle: PodCycle
    snapshot: ClusterSnapshot
    names: Sequence[str]
    evaluation: Evaluation | None
    result: ScoreResult | None
    bound: BoundPlacement | None = None


@dataclass(frozen=True, eq=False)
class Judgement:
    """``explain`` plus the placement ``place`` makes on the same snapshot, fit and scores:
    exactly what prioritize would hold for the pod on ``explanation.names`` (``None``: bound,
    invalid, no GPU asked, or no node fits)."""

    explanation: Explanation
    placement: Placement | None

    @property
    def node(self) -> str:
        return self.placement.assignment.node if self.placement is not None else ""


class Scheduler:
    def __init__(self, platform: Platform, inventory: Inventory, workload: WorkloadMix,
                 api: PodReader, events: HoldEvents, *, binder: BindWriter,
                 reservation_ttl: float, check_cpu_memory: bool = False,
                 on_new_pod: Callable[[Mapping[str, Any]], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 claims: ClaimReader | None = None,
                 cut_facts: CutFacts | None = None) -> None:
        """``cut_facts``: the cluster facts of the exact cut (``None``: offline, no cut).
        ``binder`` writes the Binding and the pod's events (``apiserver.binder.Binder``;
        online its events, with the explanation in the Normal one, go through a queue off the
        bind path). ``api`` reads a pod back at bind; ``claims``: a DRA pod's claim at bind
        (``None``: offline, no DRA)."""
        self.inventory = inventory
        self._ttl = reservation_ttl
        self.scorer = Scorer(platform.strategy(workload=workload),
                             on_failure=events.strategy_failure,
                             score_ahead=platform.config.scoring.score_ahead)
        self.announcer = Announcer(self.scorer, PlacementRecords(), binder.notify)
        self.cycles = CycleTable(platform, on_new_pod=on_new_pod,
                                 nodes=lambda: inventory.snapshot().nodes,
                                 on_let_go=self.announcer.let_go)
        self.evaluator = Evaluator(platform, self.cycles, check_cpu_memory=check_cpu_memory)
        self.placed = PlacedPods(workload)
        expiry = Expiry(inventory, events, clock)
        self.filter = Filter(inventory, self.cycles, self.evaluator, expiry, events)
        self.prioritize = Prioritize(inventory, self.cycles, self.evaluator, expiry,
                                     self.scorer, events=events,
                                     reservation_ttl=reservation_ttl)
        self.holds = DeferredHold(self.prioritize.hold_cut)
        """A one-node filter answer's hold, run once the answer is out: every verb runs
        ``holds.run()`` before it reads (``server.verbs``, ``explain``, ``commit``)."""
        self.cut = ScoreCut(platform.config.score_cut, self.scorer, cut_facts,
                            hold=self.holds.defer)
        self.warm = Warmer(inventory, self.evaluator, self.scorer)
        self.bind = Bind(inventory, self.cycles, binder, api, self.placed,
                         announce=self.announcer, unanswered_ttl=reservation_ttl,
                         handoff=self.evaluator.handoff, claims=claims)

    def observed_placed(self, info: PodInfo) -> None:
        """The sync path saw ``info`` bound (``InventoryApplier.on_placed``)."""
        if info.request is not None:
            self.placed.placed(info.key.uid, info.request, info.cpu_milli, info.memory_mib)

    def explain(self, pod_object: Mapping[str, Any],
                names: Sequence[str] | None = None) -> Explanation:
        """Judge and score the pod on ``names`` (every node by default), leaving no trace;
        a bound pod: where it is, and why (if this process bound it)."""
        self.holds.run()
        cycle = self.cycles.detached(pod_object)
        snapshot = self.inventory.snapshot()
        bound = self._bound(cycle, pod_object)
        if bound is not None:
            return Explanation(cycle, snapshot, [], None, None, bound)
        if names is None:
            names = [n for n, ok in zip(snapshot.node_names, snapshot.node_valid.tolist(),
                                        strict=True) if ok]
        placement = cycle.pod.placement
        if placement is None:
            return Explanation(cycle, snapshot, names, None, None)
        evaluation = self.evaluator.evaluate(snapshot, placement, names)
        return Explanation(cycle, snapshot, names, evaluation,
                           self.scorer.score(snapshot, placement, evaluation.fit))

    def judge(self, pod_object: Mapping[str, Any],
              names: Sequence[str] | None = None) -> Judgement:
        """``explain``, and where the extender would place the pod on that snapshot: the
        typed call the shadow, explain and the what-if use (no wire scores, no second
        snapshot; leaves no trace)."""
        explanation = self.explain(pod_object, names)
        evaluation, result = explanation.evaluation, explanation.result
        request = explanation.cycle.pod.placement
        if evaluation is None or result is None or request is None:
            return Judgement(explanation, None)
        return Judgement(explanation, place(explanation.snapshot, request, evaluation.fit,
                                            result))

    def commit(self, pod_object: Mapping[str, Any], judgement: Judgement) -> BindOutcome:
        """Hold the judgement's GPUs for the pod and bind it there, as prioritize and then a
        bind to the same node do (offline: the what-if's placement of one pod)."""
        placement = judgement.placement
        assert placement is not None
        self.holds.run()
        cycle = self.cycles.cycle(pod_object)
        pod = cycle.pod
        self.inventory.assume(pod.key, placement.assignment, cpu_milli=pod.cpu_milli,
                              memory_mib=pod.memory_mib, ttl=self._ttl)
        cycle.held = placement.assignment
        evaluation = judgement.explanation.evaluation
        if evaluation is not None:
            cycle.scores, cycle.scored_on = placement.scores, (evaluation.snapshot,
                                                               evaluation.fit)
        return self.bind(pod.key, placement.assignment.node)

    def _bound(self, cycle: PodCycle, pod_object: Mapping[str, Any]) -> BoundPlacement | None:
        """The pod object says it is bound (``spec.nodeName``; a pod posted without it is
        judged as new, as the shadow judges pods another scheduler bound); its GPUs come
        from the inventory's holding, else from its annotation."""
        node = objects.node_name(pod_object)
        if not node:
            return None
        uid = cycle.pod.key.uid
        holding = self.inventory.holding(uid) if uid else None
        recorded = self.announcer.recorded(uid) if uid else None
        if holding is not None and holding.node == node and \
                holding.state is not HoldingState.ASSUMED:
            return BoundPlacement(node, holding.assignment, "inventory", recorded)
        text = objects.annotations(pod_object).get(ANNOTATION_ASSIGNED)
        if isinstance(text, str):
            try:
                return BoundPlacement(node, decode_assignment(text), "annotation", recorded)
            except ValueError:
                pass  # the inventory reports undecodable annotations; show the node
        return BoundPlacement(node, None, "spec.nodeName", recorded)
