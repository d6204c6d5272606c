"""Filter's answer cut to the nodes that can still win, and what prioritize answers then.

``ScoreCut`` runs after filter judged the nodes, on the names that pass: when the cut is on and
every set-dependent score plugin of kube-scheduler is inert for the pod
(``kube/score_inert.py`` on the pod object and the cluster facts the watches keep,
``sync/score_facts.py``), it scores the feasible nodes with the strategy, exactly as prioritize
would on the full list, and keeps the nodes ``core/score_cut.py`` says can still win. The
scores go on the cycle (``PodCycle.cut``): prioritize, called with the kept names (or any
subset of the feasible ones), answers those scores and holds from that scoring, so the kept
nodes get the priorities of the full list (a strategy that ranks over the nodes passed would
otherwise score a smaller list differently) and nothing is scored twice. Whatever is not
known (offline, before the first lists, template nodes) means no cut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from extender.config.score_cut import ScoreCutConfig
from extender.core.reasons import Reason
from extender.core.score_cut import decide, priorities
from extender.core.scoring.base import ScoreResult
from extender.kube import objects
from extender.kube.filters.facts import Taint
from extender.kube.score_inert import CutReason, refusal
from extender.scheduling.evaluate import Evaluation
from extender.scheduling.filter import FilterOutcome
from extender.scheduling.prioritize import Scorer


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
                 facts: CutFacts | None) -> None:
        """``facts``: ``None`` offline (never cut)."""
        self._config = config
        self._scorer = scorer
        self._facts = facts

    def __call__(self, outcome: FilterOutcome, pod_object: Mapping[str, Any],
                 feasible: list[str]) -> CutAnswer:
        """``feasible``: the names filter passes, in answer order."""
        cycle = outcome.cycle
        cycle.cut = None
        reason = self._refusal(outcome, pod_object, feasible)
        if reason is not None:
            return CutAnswer(feasible, reason)
        evaluation = outcome.evaluation
        placement = cycle.pod.placement
        assert evaluation is not None and placement is not None
        result, scores = self._scorer.scores_of(evaluation, placement, pod=str(cycle.pod.key))
        positions = np.flatnonzero(evaluation.code == Reason.FITS)  # ``feasible``, in order
        assert len(positions) == len(feasible)
        decision = decide(priorities(scores[positions]), weight=self._config.extender_weight,
                          in_tree_max=self._config.in_tree_score_max, refusal=None)
        if decision.kept is None:
            cycle.cut = CutMemo(evaluation, result, scores, feasible, scores[positions])
            return CutAnswer(feasible, decision.reason)
        chosen = np.flatnonzero(decision.kept)
        kept = [feasible[i] for i in chosen.tolist()]
        cycle.cut = CutMemo(evaluation, result, scores, kept, scores[positions[chosen]])
        return CutAnswer(kept, decision.reason, len(feasible) - len(kept))

    def _refusal(self, outcome: FilterOutcome, pod_object: Mapping[str, Any],
                 feasible: list[str]) -> CutReason | None:
        facts = self._facts
        if not self._config.enabled:
            return CutReason.DISABLED
        if len(feasible) < 2:
            return CutReason.FEWER_THAN_TWO
        if facts is None or not facts.known():
            return CutReason.FACTS_UNKNOWN
        evaluation = outcome.evaluation
        if evaluation is None or evaluation.templates is not None or \
                outcome.cycle.pod.placement is None:
            return CutReason.TEMPLATE_NODES
        return refusal(pod_object, tainted=facts.tainted_among(feasible),
                       service_selectors=facts.selectors(objects.namespace(pod_object)),
                       pods_with_affinity=facts.pods_with_affinity())
