"""Prioritize: score the nodes that fit, and hold the GPUs of the best one.

kube-scheduler starts the next pod's cycle before this pod's bind lands, and that next filter
must already see these GPUs as taken: so the best node's GPUs are assumed in the inventory
(``ASSUMED``, with a TTL) and the bind keeps them if kube-scheduler agrees. Only for a pod that
passed this extender's filter in the same cycle, within a budget per node and per namespace,
and never for a bound pod (``scheduling/holds.py``). When filter answers one node,
kube-scheduler calls no prioritize: the same hold is taken then, from filter's scoring
(``hold_cut``, called by ``cut.py``).

Writes: the cycle's fit (if the generation moved since filter), its scores and its held
assignment; the inventory's assumed holding; expired holds (``Expiry``).
Template nodes (the ``Nodes`` form) are judged as filter judges them and scored on their scratch
snapshot; they cannot be held (they do not exist yet).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from extender.core.assign import NoFitError
from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero
from extender.core.scoring.base import (
    Explainer,
    NodeTerms,
    Refresher,
    ScoreResult,
    Speculative,
    Strategy,
)
from extender.errors import CapacityError, UnknownNodeError
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import HoldingState, Inventory
from extender.scheduling.cycle import CycleTable, HoldEvents, PodCycle
from extender.scheduling.evaluate import Evaluation, Evaluator
from extender.scheduling.expiry import Expiry
from extender.scheduling.holds import api_holding, bound_scores, within_budget
from extender.scheduling.outcome import Decision
from extender.scheduling.place import place
from extender.scheduling.speculation import Speculation, SpeculationPace

_log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class PrioritizeOutcome:
    decision: Decision
    cycle: PodCycle
    scores: npt.NDArray[np.float64] | None = None
    """(len(names),) strategy scores in [0, 100], 0 where the node does not fit (``SCORED``)."""


TAKEN_AHEAD_KEPT = 32
"""Calls answered from a speculation whose explanation can read its terms (as many as the
default strategy's ``ScoredMemo`` keeps)."""

FALLBACK_SCORE = 50.0
"""What every fitting node scores when the strategy fails for a call: all equal, so
kube-scheduler's own score plugins order them, and the GPUs come from ``assign``'s default
rules (``choice`` -1). Documented in the README ("Placement policy")."""


def fallback_scores(fit: FitResult) -> ScoreResult:
    """The documented default order for one call whose strategy raised."""
    positions = flat_nonzero(fit.fits)
    return ScoreResult(fit.rows[positions], np.full(len(positions), FALLBACK_SCORE),
                       np.full(len(positions), -1, dtype=np.int16))


class Scorer:
    """The strategy behind a lock: strategies keep caches (the fragmentation model); scoring
    is serial per scheduler anyway, the lock only matters for a second scheduler or the debug
    endpoint.

    A strategy that raises does not stop scoring: that call falls back to ``fallback_scores``,
    is logged with the pod and counted (``on_failure``), and the next call tries the strategy
    again, so one odd pod or state can never switch scoring off for every later pod."""

    def __init__(self, strategy: Strategy, *,
                 on_failure: Callable[[], None] | None = None,
                 score_ahead: bool = True) -> None:
        """``score_ahead``: ``speculate`` may score (``scoring.scoreAhead``)."""
        self.strategy = strategy
        self._refreshes = isinstance(strategy, Refresher)
        self._explains = isinstance(strategy, Explainer)
        """Checked once: a runtime-checkable protocol's ``isinstance`` walks its members on
        every call (~7 % of a placement's explanation)."""
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self._speculative = score_ahead and isinstance(strategy, Speculative)
        self._ahead: Speculation | None = None
        self._ahead_taken = False
        self.pace = SpeculationPace()
        self._taken_ahead: tuple[tuple[FitResult, FitResult], ...] = ()
        """(a call's fit, the speculation's fit it was scored from) for the last calls that
        took a speculation: their explanation reads the speculation's terms."""
        self.speculated = 0
        """Scorings done ahead (``gpu_extender_scores_ahead_total``)."""
        self.taken_ahead = 0
        """Calls answered from one (``gpu_extender_scores_taken_ahead_total``)."""

    def score(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
              fit: FitResult, *, pod: str = "") -> ScoreResult:
        with self._lock:
            ahead = self._from_ahead(snapshot, placement, fit)
            if ahead is not None:
                return ahead
            try:
                return self.strategy.score(snapshot, placement, fit)
            except Exception as exc:  # a strategy bug must cost one call, never the service
                _log.exception("strategy failed; default order for this call", extra={
                    "fields": {"pod": pod, "strategy": type(self.strategy).__name__,
                               "error": f"{type(exc).__name__}: {exc}"}})
                if self._on_failure is not None:
                    self._on_failure()
                return fallback_scores(fit)

    def speculate(self, placement: PlacementRequest, judge: Callable[[], Evaluation]
                  ) -> None:
        """Score ``placement`` on what ``judge`` evaluates now, for a later call with the same
        inputs (``scheduling.speculation``): only a ``Speculative`` strategy, on known nodes,
        and as often as ``pace`` lets (``judge`` is not called otherwise). A failure is
        logged, never raised (the call scores itself, and reports it)."""
        if not self._speculative:
            return
        strategy = cast(Speculative, self.strategy)
        with self._lock:
            if self._ahead is not None:
                self.pace.ended(self._ahead_taken)
            self._ahead, self._ahead_taken = None, False
            if not self.pace.now():
                return
            try:
                evaluation = judge()
                snapshot, fit = evaluation.snapshot, evaluation.fit
                if evaluation.templates is not None or not fit.fits.any():
                    return
                key = strategy.speculation_key()
                result = self.strategy.score(snapshot, placement, fit)
                if strategy.speculation_key() != key:
                    return  # the mix moved while it scored: which one it read is unknown
            except Exception:  # the call itself scores again, and counts the failure
                _log.exception("scoring ahead failed; the next call scores itself", extra={
                    "fields": {"strategy": type(self.strategy).__name__}})
                return
            self._ahead = Speculation.of(snapshot, placement, key, fit, result)
            self.speculated += 1

    def _from_ahead(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
                    fit: FitResult) -> ScoreResult | None:
        """The speculation's scores of ``fit``, if they are exact for it; under the lock."""
        ahead = self._ahead
        if ahead is None or not ahead.holds_for(
                snapshot, placement, cast(Speculative, self.strategy).speculation_key()):
            return None
        result = ahead.scores_for(fit)
        if result is not None:
            self.taken_ahead += 1
            self._ahead_taken = True
            self._taken_ahead = ((fit, ahead.fit), *self._taken_ahead[:TAKEN_AHEAD_KEPT - 1])
        return result

    def _scored_fit(self, fit: FitResult) -> FitResult:
        """The fit ``fit``'s scores were computed on (a speculation's), else ``fit``."""
        for taken, scored in self._taken_ahead:
            if taken is fit:
                return scored
        return fit

    def refresh(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
                fit: FitResult) -> None:
        """The strategy's ``Refresher.refresh``, if it has one; a failure is logged, never
        raised (the next ``score`` does the same work itself)."""
        if not self._refreshes:
            return
        refresher = cast(Refresher, self.strategy)
        with self._lock:
            try:
                refresher.refresh(snapshot, placement, fit)
            except Exception:
                _log.exception("strategy refresh failed", extra={
                    "fields": {"strategy": type(self.strategy).__name__}})

    def explain(self, snapshot: ClusterSnapshot, placement: PlacementRequest, fit: FitResult,
                rows: npt.NDArray[np.int64]) -> list[NodeTerms] | None:
        """The strategy's terms on ``rows`` (``Explainer``), ``None`` if it has none or it
        fails (an explanation is never worth a failed bind: logged, and left out)."""
        if not self._explains:
            return None
        explainer = cast(Explainer, self.strategy)
        with self._lock:
            try:  # the same rows fit in both: their terms are the same
                return explainer.explain(snapshot, placement, self._scored_fit(fit), rows)
            except Exception:  # a strategy bug must not cost the bind its answer
                _log.exception("strategy explanation failed", extra={
                    "fields": {"strategy": type(self.strategy).__name__}})
                return None

    def scores_of(self, evaluation: Evaluation, placement: PlacementRequest, *, pod: str = ""
                  ) -> tuple[ScoreResult, npt.NDArray[np.float64]]:
        """The strategy's result on the known nodes, and a score per name (0: no fit;
        template nodes scored on their own snapshot)."""
        result = self.score(evaluation.snapshot, placement, evaluation.fit, pod=pod)
        scores = np.zeros(len(evaluation.names), dtype=np.float64)
        scores[evaluation.known[flat_nonzero(evaluation.fit.fits)]] = result.scores
        templates = evaluation.templates
        if templates is not None and templates.fit.fits.any():
            judged = self.score(templates.snapshot, placement, templates.fit, pod=pod)
            scores[templates.positions[flat_nonzero(templates.fit.fits)]] = judged.scores
        return result, scores


class Prioritize:
    def __init__(self, inventory: Inventory, cycles: CycleTable, evaluator: Evaluator,
                 expiry: Expiry, scorer: Scorer, *, events: HoldEvents,
                 reservation_ttl: float) -> None:
        self._inventory = inventory
        self._cycles = cycles
        self._evaluator = evaluator
        self._expiry = expiry
        self._scorer = scorer
        self._events = events
        self._ttl = reservation_ttl

    def __call__(self, pod_object: Mapping[str, Any], names: Sequence[str],
                 nodes: Sequence[Mapping[str, Any]] | None = None) -> PrioritizeOutcome:
        cycle = self._cycles.cycle(pod_object)
        pod = cycle.pod
        if pod.placement is None:
            return PrioritizeOutcome(
                Decision.INVALID_REQUEST if pod.error is not None else Decision.PASSTHROUGH,
                cycle)
        if not self._inventory.has_synced():
            return PrioritizeOutcome(Decision.NOT_SYNCED, cycle)
        self._expiry.tick()
        bound = api_holding(self._inventory, pod.key.uid)
        if bound is not None:  # a retried cycle of a bound pod: its node, nothing held
            return PrioritizeOutcome(Decision.SCORED, cycle, bound_scores(names, bound.node))
        memo, cycle.cut = cycle.cut, None
        cut_scores = memo.scores_for(names) if memo is not None else None
        if memo is not None and cut_scores is not None:  # filter scored every feasible node
            cycle.scores = memo.result
            cycle.scored_on = (memo.evaluation.snapshot, memo.evaluation.fit)
            if not self._held_by_filter(cycle):
                self._hold_best(cycle, memo.evaluation, memo.result)
            return PrioritizeOutcome(Decision.SCORED, cycle, cut_scores)
        evaluation = self._evaluator.evaluate(
            self._inventory.snapshot(), pod.placement, names,
            cycle=cycle if pod.key.uid else None, nodes=nodes)
        result, scores = self._scorer.scores_of(evaluation, pod.placement, pod=str(pod.key))
        cycle.scores, cycle.scored_on = result, (evaluation.snapshot, evaluation.fit)
        self._hold_best(cycle, evaluation, result)
        return PrioritizeOutcome(Decision.SCORED, cycle, scores)

    def hold_cut(self, cycle: PodCycle) -> None:
        """Hold from filter's scoring (``cycle.cut``) what prioritize would hold from it:
        filter answered one node, so kube-scheduler calls no prioritize (``cut.py``). The
        scoring stays on the cycle for a prioritize that comes anyway."""
        memo = cycle.cut
        if memo is None or api_holding(self._inventory, cycle.pod.key.uid) is not None:
            return
        cycle.scores = memo.result
        cycle.scored_on = (memo.evaluation.snapshot, memo.evaluation.fit)
        self._hold_best(cycle, memo.evaluation, memo.result)

    def _held_by_filter(self, cycle: PodCycle) -> bool:
        """Filter of this cycle answered one node and held it from the same scoring
        (``hold_cut``), and the hold is still there: holding again would change nothing.
        (A tentative hold recorded on the cycle is this cycle's: each filter drops the pod's
        earlier tentative hold; a pinned one, a bind in flight, is not filter's.)"""
        held = cycle.held
        holding = self._inventory.holding(cycle.pod.key.uid) if held is not None else None
        return holding is not None and holding.state is HoldingState.ASSUMED and \
            holding.expires_at is not None and holding.assignment is held

    def _hold_best(self, cycle: PodCycle, evaluation: Evaluation, result: ScoreResult) -> None:
        """Assume the GPUs the top-scored node would give the pod (the bind keeps them if
        kube-scheduler agrees, or chooses again on the node it picked)."""
        pod = cycle.pod
        if not pod.key.uid:
            return
        if not cycle.passed:  # no filter of ours passed this cycle (an invented request)
            self._events.reservation("unfiltered")
            return
        assert pod.placement is not None
        try:
            chosen = place(evaluation.snapshot, pod.placement, evaluation.fit, result)
            if chosen is None:
                return
            if not within_budget(self._inventory, pod.key.uid, chosen.assignment.node,
                                 pod.key.namespace):
                self._events.reservation("over_budget")
                return
            self._inventory.assume(pod.key, chosen.assignment, cpu_milli=pod.cpu_milli,
                                   memory_mib=pod.memory_mib, ttl=self._ttl)
        except (NoFitError, CapacityError, UnknownNodeError) as exc:
            # A concurrent bind took the GPUs since the snapshot: the bind will choose.
            self._events.reservation("skipped")
            _log.debug("no reservation", extra={"fields": {"pod": str(pod.key),
                                                            "reason": str(exc)}})
            return
        cycle.held = chosen.assignment
        self._events.reservation("placed")
