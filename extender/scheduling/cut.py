"""Filter's answer cut to the nodes that can still win, and what prioritize answers then.

``ScoreCut`` runs after filter judged the nodes, on the names that pass: when the cut is on and
the cluster facts are known, it scores the feasible nodes with the strategy, exactly as
prioritize would on the full list, and keeps the nodes ``core/score_cut.py`` says can still
win: every node within reach of the best when every set-dependent score plugin of
kube-scheduler is inert for the pod (``kube/score_inert.py`` on the pod object and the cluster
facts the watches keep, ``sync/score_facts.py``), and a lone winner alone whatever they do
("within reach": the in-tree spread of the plugins that score the pod, ``scoreCut``'s weights).
The scores go on the cycle (``PodCycle.cut``): prioritize, called with the kept names (or any
subset of the feasible ones), answers those scores and holds from that scoring, so the kept
nodes get the priorities of the full list (a strategy that ranks over the nodes passed would
otherwise score a smaller list differently) and nothing is scored twice. Whatever is not
known (offline, before the first lists, template nodes) means no cut.

**One node answered, one hold here.** kube-scheduler calls no prioritize when one node is left
(``schedule_one.go:593-604``), so when filter answers one node (a lone winner, or the only one
that fits) the GPUs prioritize would have held are held (``Hold``: the same hold, budget and
rules), and the next pod's filter sees them taken before this pod's bind lands. The service's
``Hold`` runs it once the answer is out (``deferred_hold.py``): before any verb reads again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from extender.config.score_cut import ScoreCutConfig
from extender.core.reasons import FITS_CODE
from extender.core.rowops import flat_nonzero
from extender.core.score_cut import decide, priorities
from extender.core.scoring.base import ScoreResult
from extender.kube import objects
from extender.kube.filters.facts import Taint
from extender.kube.score_inert import CutReason, scoring_plugins, set_dependent_reasons
from extender.scheduling.cycle import PodCycle
from extender.scheduling.evaluate import Evaluation
from extender.scheduling.filter import FilterOutcome
from extender.scheduling.prioritize import Scorer

Hold = Callable[[PodCycle], None]
"""Hold the GPUs of the best node of the cycle's ``cut`` scoring, as prioritize does
(``Prioritize.hold_cut``), now or once the answer is out (``DeferredHold.defer``)."""


class CutFacts(Protocol):
    """The cluster facts the cut reads (``sync.score_facts.ScoreFacts``)."""

    def known(self) -> bool: ...
    def tainted_among(self, names: Sequence[str]) -> list[tuple[Taint, ...]]: ...
    def selectors(self, namespace: str) -> list[dict[str, str]]: ...
    def pods_with_affinity(self) -> int: ...


@dataclass(frozen=True, eq=False)
class CutMemo:
    """Filter's scoring of every feasible node, for prioritize of the same cycle."""

    evaluation: Evaluation
    result: ScoreResult
    scores: npt.NDArray[np.float64]
    """Strategy score (0..100) per name of ``evaluation`` (0: no fit)."""
    answered: list[str]
    """The names filter answered, and their scores: what prioritize is normally asked."""
    answered_scores: npt.NDArray[np.float64]

    def scores_for(self, names: Sequence[str]) -> npt.NDArray[np.float64] | None:
        """The scores of ``names``, ``None`` if one of them was not judged here."""
        if list(names) == self.answered:
            return self.answered_scores
        by_name = dict(zip(self.evaluation.names, self.scores.tolist(), strict=True))
        if not all(n in by_name for n in names):
            return None
        return np.array([by_name[n] for n in names], dtype=np.float64)


@dataclass(frozen=True)
class CutAnswer:
    feasible: list[str]
    reason: CutReason
    dropped: int = 0


class ScoreCut:
    def __init__(self, config: ScoreCutConfig, scorer: Scorer,
                 facts: CutFacts | None, *, hold: Hold | None = None) -> None:
        """``facts``: ``None`` offline (never cut); ``hold``: what holds the GPUs when one
        node is answered (``None``: nothing is held)."""
        self._config = config
        self._scorer = scorer
        self._facts = facts
        self._hold = hold

    def __call__(self, outcome: FilterOutcome, pod_object: Mapping[str, Any],
                 feasible: list[str]) -> CutAnswer:
        """``feasible``: the names filter passes, in answer order."""
        cycle = outcome.cycle
        cycle.cut = None
        if len(feasible) == 1:  # prioritize will not come: hold here
            if self._scorable(outcome):
                self._score(outcome, feasible)
                self._hold_one(cycle)
            return CutAnswer(feasible, CutReason.FEWER_THAN_TWO)
        reason = self._refusal(outcome)
        if reason is not None:
            return CutAnswer(feasible, reason)
        facts = self._facts
        assert facts is not None
        reasons = set_dependent_reasons(
            pod_object, tainted=facts.tainted_among(feasible),
            service_selectors=facts.selectors(objects.namespace(pod_object)),
            pods_with_affinity=facts.pods_with_affinity())
        memo, positions = self._score(outcome, feasible)
        decision = decide(priorities(memo.answered_scores), weight=self._config.extender_weight,
                          in_tree_spread=self._config.in_tree_spread(scoring_plugins(reasons)),
                          refusal=reasons[0] if reasons else None)
        if decision.kept is None:
            return CutAnswer(feasible, decision.reason)
        chosen = flat_nonzero(decision.kept)
        kept = [feasible[i] for i in chosen.tolist()]
        cycle.cut = replace(memo, answered=kept, answered_scores=memo.scores[positions[chosen]])
        if len(kept) == 1:
            self._hold_one(cycle)
        return CutAnswer(kept, decision.reason, len(feasible) - len(kept))

    def _score(self, outcome: FilterOutcome, feasible: list[str]
               ) -> tuple[CutMemo, npt.NDArray[np.intp]]:
        """Score every feasible node, as prioritize would on the full list, and keep it on
        the cycle (``CutMemo``, answering every feasible node): the memo, and the positions
        of ``feasible`` among the evaluation's names."""
        cycle = outcome.cycle
        evaluation = outcome.evaluation
        placement = cycle.pod.placement
        assert evaluation is not None and placement is not None
        result, scores = self._scorer.scores_of(evaluation, placement, pod=str(cycle.pod.key))
        positions = flat_nonzero(evaluation.code == FITS_CODE)  # ``feasible``, in order
        assert len(positions) == len(feasible)
        memo = CutMemo(evaluation, result, scores, feasible, scores[positions])
        cycle.cut = memo
        return memo, positions

    def _hold_one(self, cycle: PodCycle) -> None:
        if self._hold is not None:
            self._hold(cycle)

    def _scorable(self, outcome: FilterOutcome) -> bool:
        """The pod's nodes are the inventory's and it asks for a placement (not the
        ``Nodes`` form with unknown nodes): what prioritize could score and hold."""
        evaluation = outcome.evaluation
        return evaluation is not None and evaluation.templates is None and \
            outcome.cycle.pod.placement is not None and not outcome.bound

    def _refusal(self, outcome: FilterOutcome) -> CutReason | None:
        """Why no cut at all, whatever the scores (``None``: the scores decide)."""
        if not self._config.enabled:
            return CutReason.DISABLED
        if self._facts is None or not self._facts.known():
            return CutReason.FACTS_UNKNOWN
        if not self._scorable(outcome):
            return CutReason.TEMPLATE_NODES
        return None
