"""The verbs as HTTP sees them: wire arguments in, an encoded ``Answer`` out, a metric per call.

What each verb does to the pod lives in ``extender.scheduling`` (filter, prioritize, bind); this
module only reads the protocol's arguments, records the outcome and writes the answer in the
form of the request:

- filter: ``NodeNames`` (fast path) or ``Nodes``; failures grouped by message;
- prioritize: the non-zero scores only (kube-scheduler counts a node it does not list as 0),
  strategy scores 0..100 as priorities 0..10;
- bind: ``Error`` ('' on success).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.rowops import flat_nonzero
from extender.core.score_cut import priorities
from extender.model import PodKey
from extender.platform import Platform
from extender.scheduling.outcome import Decision
from extender.scheduling.scheduler import Scheduler
from extender.server.answers import (
    Answer,
    NodeGroup,
    encode_document,
    encode_filter_names,
    encode_priorities,
)
from extender.server.explain_report import bound_report, reason_groups
from extender.server.failures import ReasonMessages, group_failures
from extender.server.metrics import ExtenderMetrics
from extender.server.wire import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    FilterArgsDecoder,
    filter_error,
    filter_result,
    node_names,
)

NOT_SYNCED = "inventory not synced yet"
NO_PRIORITIES = Answer(b"[]")


class SchedulingVerbs:
    def __init__(self, platform: Platform, scheduler: Scheduler,
                 metrics: ExtenderMetrics) -> None:
        self.scheduler = scheduler
        self._metrics = metrics
        self._messages = ReasonMessages(platform.catalog)
        self.filter_args = FilterArgsDecoder()
        """Decodes filter's bodies (kept here for its counter, ``node_lists_reused``)."""

    @property
    def fit_cache_hits(self) -> int:
        """Prioritize calls that reused the filter's fit instead of recomputing it."""
        return self.scheduler.evaluator.fit_cache_hits

    def filter(self, args: ExtenderArgs) -> Answer:
        self.scheduler.holds.run()  # a one-node answer's hold, if still pending
        names = node_names(args)
        outcome = self.scheduler.filter(args["Pod"], names, _node_objects(args))
        decision = outcome.decision
        self._metrics.decision("filter", decision.value)
        if decision is Decision.INVALID_REQUEST:
            error = outcome.cycle.pod.error
            assert error is not None
            return _filter_answer(args, [], [], [NodeGroup(names, error)])
        if decision is Decision.PASSTHROUGH:
            return _filter_answer(args, names, [], [])
        if decision is Decision.NOT_SYNCED:
            return encode_document(filter_error(args, NOT_SYNCED))
        evaluation = outcome.evaluation
        assert evaluation is not None
        placement = outcome.cycle.pod.placement
        if placement is not None and not outcome.bound:
            self.scheduler.warm.expect(placement, names)
        self._metrics.node_verdicts(evaluation.code)
        feasible, failed, unresolvable = group_failures(evaluation, self._messages,
                                                        outcome.cycle.pod.request)
        if feasible:  # the exact cut: only nodes that can still win (docs/score-cut.md)
            cut = self.scheduler.cut(outcome, args["Pod"], feasible)
            self._metrics.score_cut(cut.reason, len(cut.feasible), cut.dropped)
            feasible = cut.feasible
        return _filter_answer(args, feasible, failed, unresolvable)

    def prioritize(self, args: ExtenderArgs) -> Answer:
        """Scores 1..10 of the nodes that fit; every node not listed scores 0."""
        self.scheduler.holds.run()  # a one-node answer's hold, if still pending
        names = node_names(args)
        outcome = self.scheduler.prioritize(args["Pod"], names, _node_objects(args))
        self._metrics.decision("prioritize", outcome.decision.value)
        if outcome.scores is None:
            return NO_PRIORITIES
        placement = outcome.cycle.pod.placement
        if placement is not None:  # it may have held GPUs: rows changed for the next pod
            self.scheduler.warm.expect(placement)
        return encode_priorities(names, wire_scores(outcome.scores))

    def warm_next(self) -> None:
        """After a filter or prioritize answer is sent: hold the node a one-node answer named
        (``scheduling.deferred_hold``), then refresh what the next pod of the same request
        reads (``scheduling.warm``)."""
        self.scheduler.holds.run(after_answer=True)
        self.scheduler.warm.run()

    def bind(self, args: ExtenderBindingArgs) -> Answer:
        self.scheduler.holds.run()  # a one-node answer's hold, if still pending
        key = PodKey(args["PodNamespace"], args["PodName"], args["PodUID"])
        outcome = self.scheduler.bind(key, args["Node"])
        self._metrics.decision("bind", outcome.decision.value)
        if outcome.decision is Decision.CONFLICT:
            self._metrics.bind_conflict()
        return encode_document(ExtenderBindingResult(Error=outcome.error))

    def explain(self, pod_object: Mapping[str, Any], names: list[str] | None = None
                ) -> dict[str, Any]:
        """A pending pod: why it fits or not on each node (all nodes by default), with
        scores, and the reasons grouped by node class; a bound pod: its placement and the
        breakdown of the chosen node against the runner-up."""
        explanation = self.scheduler.explain(pod_object, names)
        pod = explanation.cycle.pod
        names = list(explanation.names)
        report: dict[str, Any] = {
            "pod": str(pod.key), "uid": pod.key.uid,
            "request": pod.request.describe() if pod.request else None,
            # the placement's request: a pod typed by its node selection says by which rule
            "typeSource": (pod.placement.request.type_source if pod.placement
                           else pod.request.type_source if pod.request else None),
            "error": pod.error, "synced": self.scheduler.inventory.has_synced(),
            "generation": explanation.snapshot.generation,
            "status": "pending", "placement": None, "reasons": [],
        }
        if explanation.bound is not None:
            # bound: where it is and why, not a re-score as if it were new
            report |= {"status": "bound", "placement": bound_report(explanation.bound),
                       "summary": {}, "nodes": []}
            return report
        evaluation, result = explanation.evaluation, explanation.result
        if evaluation is None or result is None:
            report["nodes"] = []
            report["summary"] = {"passthrough": len(names)} if pod.error is None else {}
            return report
        scores = np.full(len(names), -1, dtype=np.int64)
        positions = evaluation.known[flat_nonzero(evaluation.fit.fits)]
        scores[positions] = wire_scores(result.scores)
        messages = self._messages.messages(evaluation.code, evaluation.params, pod.request)
        verdicts = [_VERDICT_NAMES[v] for v in evaluation.verdict.tolist()]
        rows = sorted(zip(names, verdicts, messages, scores.tolist(), strict=True),
                      key=lambda r: (_VERDICT_ORDER[r[1]], -r[3], r[0]))
        nodes = [{"node": name, "verdict": verdict, "reason": message or None,
                  "score": score if score >= 0 else None}
                 for name, verdict, message, score in rows]
        report["summary"] = {v: verdicts.count(v) for v in _VERDICT_ORDER}
        report["reasons"] = reason_groups(explanation.snapshot, names, verdicts,
                                          evaluation.code, messages)
        report["nodes"] = nodes
        return report


_VERDICT_NAMES = {0: "fits", 1: "unschedulable", 2: "unresolvable"}
_VERDICT_ORDER = {"fits": 0, "unschedulable": 1, "unresolvable": 2}


def _node_objects(args: ExtenderArgs) -> Sequence[Mapping[str, Any]] | None:
    nodes = args["Nodes"]
    return None if nodes is None else nodes["items"]


def _filter_answer(args: ExtenderArgs, feasible: list[str], failed: list[NodeGroup],
                   unresolvable: list[NodeGroup]) -> Answer:
    """In the form of the request: ``NodeNames`` (fast path) or ``Nodes``."""
    if args["NodeNames"] is not None:
        return encode_filter_names(feasible, failed, unresolvable)
    return encode_document(filter_result(
        args, feasible, {n: str(g.value) for g in failed for n in g.names},
        {n: str(g.value) for g in unresolvable for n in g.names}))


def wire_scores(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Strategy scores in [0, 100] -> extender priorities 0..10, rounding half up (the cut
    judges the same priorities: ``core.score_cut.priorities``)."""
    return priorities(scores)
