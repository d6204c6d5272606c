"""Filter and prioritize: the two verbs inside kube-scheduler's serial scheduling cycle.

Both take one inventory snapshot per call and work on all candidate nodes at once (see
``evaluate``), and encode their answers grouped by message or score (see ``answers``), so no
Python code runs per node.

- Filter is pure: it reports every feasible node, ``FailedNodes`` for nodes that are only full
  now (preemption may help), ``FailedAndUnresolvableNodes`` for nodes that can never host the
  pod. Its one write drops a stale prioritize-time hold of the very pod being filtered (kube is
  scheduling it again, so that hold is dead and must not count against it).
- Prioritize scores the nodes that fit (0..10; it lists the non-zero scores only, as
  kube-scheduler counts a node it does not list as 0) and holds the GPUs of its best node for
  the pod (``RESERVED``, with a TTL): kube-scheduler starts the next pod's cycle before this
  pod's bind lands, and that next filter must already see these GPUs as taken.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.assign import NoFitError, assign
from extender.core.reasons import Reason
from extender.core.scoring.base import ScoreResult, Strategy
from extender.errors import CapacityError, UnknownNodeError
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import HoldingState, Inventory
from extender.platform import Platform
from extender.server.answers import (
    Answer,
    NodeGroup,
    encode_document,
    encode_filter_names,
    encode_priorities,
)
from extender.server.evaluate import Evaluation, Evaluator, ReasonMessages, group_failures
from extender.server.metrics import ExtenderMetrics
from extender.server.pods import DecodedPod, PodRequests
from extender.server.scratch import evaluate_templates
from extender.server.wire import (
    MAX_PRIORITY,
    ExtenderArgs,
    filter_error,
    filter_result,
    node_names,
)

_log = logging.getLogger(__name__)

NOT_SYNCED = "inventory not synced yet"
EXPIRE_EVERY = 0.25
NO_PRIORITIES = Answer(b"[]")


class SchedulingVerbs:
    def __init__(self, platform: Platform, inventory: Inventory, strategy: Strategy,
                 pods: PodRequests, metrics: ExtenderMetrics, *, reservation_ttl: float,
                 check_cpu_memory: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._platform = platform
        self._inventory = inventory
        self._strategy = strategy
        self._pods = pods
        self._metrics = metrics
        self._ttl = reservation_ttl
        self._clock = clock
        self._next_expiry_check = 0.0
        self._evaluator = Evaluator(check_cpu_memory=check_cpu_memory)
        self._messages = ReasonMessages(platform.catalog)
        # Strategies keep caches (the fragmentation model); scoring is serial per scheduler
        # anyway, the lock only matters for a second scheduler or the debug endpoint.
        self._score_lock = threading.Lock()

    @property
    def fit_cache_hits(self) -> int:
        """Prioritize calls that reused the filter's fit instead of recomputing it."""
        return self._evaluator.fit_cache_hits

    # -- filter ------------------------------------------------------------------------------

    def filter(self, args: ExtenderArgs) -> Answer:
        names = node_names(args)
        pod = self._pods.decode(args["Pod"])
        if pod.error:
            self._metrics.decision("filter", "invalid_request")
            return self._answer(args, [], [], [NodeGroup(names, pod.error)])
        if pod.placement is None:
            self._metrics.decision("filter", "passthrough")
            return self._answer(args, names, [], [])
        if not self._inventory.has_synced():
            self._metrics.decision("filter", "not_synced")
            return encode_document(filter_error(args, NOT_SYNCED))
        self._expire()
        self._drop_stale_hold(pod)
        evaluation = self._evaluate(pod, names, args)
        feasible, failed, unresolvable = group_failures(evaluation, self._messages,
                                                        pod.request)
        self._metrics.node_verdicts(evaluation.code)
        self._metrics.decision("filter", "feasible" if feasible else "no_fit")
        return self._answer(args, feasible, failed, unresolvable)

    @staticmethod
    def _answer(args: ExtenderArgs, feasible: list[str], failed: list[NodeGroup],
                unresolvable: list[NodeGroup]) -> Answer:
        """In the form of the request: ``NodeNames`` (fast path) or ``Nodes``."""
        if args["NodeNames"] is not None:
            return encode_filter_names(feasible, failed, unresolvable)
        return encode_document(filter_result(
            args, feasible, {n: str(g.value) for g in failed for n in g.names},
            {n: str(g.value) for g in unresolvable for n in g.names}))

    def _drop_stale_hold(self, pod: DecodedPod) -> None:
        holding = self._inventory.holding(pod.key.uid) if pod.key.uid else None
        # expires_at None is a bind in flight (pinned): that one is alive.
        if holding is not None and holding.state is HoldingState.RESERVED and \
                holding.expires_at is not None:
            self._inventory.release(pod.key.uid)
            self._metrics.reservation("superseded")

    def _evaluate(self, pod: DecodedPod, names: list[str],
                  args: ExtenderArgs | None = None) -> Evaluation:
        assert pod.placement is not None
        snapshot = self._inventory.snapshot()
        evaluation = self._evaluator.evaluate(
            snapshot, pod.placement, names,
            cache_key=f"{pod.key.uid}@{pod.resource_version}" if pod.key.uid else "")
        if args is not None and args["Nodes"] is not None:
            # Full Node objects (cluster autoscaler simulations): nodes the inventory does
            # not know are judged as they are described, empty.
            unknown = np.flatnonzero(evaluation.code == Reason.UNKNOWN_NODE)
            if len(unknown):
                items = args["Nodes"]["items"]
                code, params = evaluate_templates(self._platform, pod.placement,
                                                  [items[i] for i in unknown.tolist()])
                evaluation.code[unknown] = code
                evaluation.params[unknown] = params
        return evaluation

    # -- prioritize --------------------------------------------------------------------------

    def prioritize(self, args: ExtenderArgs) -> Answer:
        """Scores 1..10 of the nodes that fit; every node not listed scores 0."""
        names = node_names(args)
        pod = self._pods.decode(args["Pod"])
        if pod.placement is None:
            self._metrics.decision("prioritize",
                                   "invalid_request" if pod.error else "passthrough")
            return NO_PRIORITIES
        if not self._inventory.has_synced():
            self._metrics.decision("prioritize", "not_synced")
            return NO_PRIORITIES
        self._expire()
        evaluation = self._evaluate(pod, names)
        result = self._score(evaluation.snapshot, pod, evaluation)
        scores = np.zeros(len(names), dtype=np.int64)
        positions = evaluation.known[np.flatnonzero(evaluation.fit.fits)]
        scores[positions] = wire_scores(result.scores)
        self._hold_best(evaluation.snapshot, pod, result)
        self._metrics.decision("prioritize", "scored")
        return encode_priorities(names, scores)

    def _score(self, snapshot: ClusterSnapshot, pod: DecodedPod,
               evaluation: Evaluation) -> ScoreResult:
        assert pod.placement is not None
        with self._score_lock:
            return self._strategy.score(snapshot, pod.placement, evaluation.fit)

    def _hold_best(self, snapshot: ClusterSnapshot, pod: DecodedPod,
                   result: ScoreResult) -> None:
        """Reserve the GPUs the top-scored node would give the pod (the bind keeps them if
        kube-scheduler agrees, or chooses again on the node it picked)."""
        if not pod.key.uid or len(result.rows) == 0:
            return
        best = int(np.argmax(result.scores))
        choice = int(result.choice[best])
        assert pod.placement is not None
        try:
            assignment = assign(snapshot, pod.placement, int(result.rows[best]),
                                order=[choice] if choice >= 0 else None)
            self._inventory.reserve(pod.key, assignment, cpu_milli=pod.cpu_milli,
                                    memory_mib=pod.memory_mib, ttl=self._ttl)
        except (NoFitError, CapacityError, UnknownNodeError) as exc:
            # A concurrent bind took the GPUs since the snapshot: the bind will choose.
            self._metrics.reservation("skipped")
            _log.debug("no reservation", extra={"fields": {"pod": str(pod.key),
                                                            "reason": str(exc)}})
            return
        self._metrics.reservation("placed")

    def _expire(self) -> None:
        """Release reservations whose TTL passed. ``Inventory.expire`` scans every holding,
        so it runs at most every ``EXPIRE_EVERY`` seconds: a hold outlives its TTL by that
        much at most, instead of costing O(pods) on every call."""
        now = self._clock()
        if now < self._next_expiry_check:
            return
        self._next_expiry_check = now + EXPIRE_EVERY
        self._metrics.reservation("expired", len(self._inventory.expire()))

    # -- explain -----------------------------------------------------------------------------

    def explain(self, pod_object: Mapping[str, Any], names: list[str] | None = None
                ) -> dict[str, Any]:
        """Why the pod fits or not on each node (all nodes by default), with scores."""
        pod = self._pods.decode(pod_object, learn=False)
        snapshot = self._inventory.snapshot()
        if names is None:
            names = [n for n, ok in zip(snapshot.node_names, snapshot.node_valid.tolist(),
                                        strict=True) if ok]
        report: dict[str, Any] = {
            "pod": str(pod.key), "uid": pod.key.uid,
            "request": pod.request.describe() if pod.request else None,
            # the placement's request: a pod typed by its node selection says by which rule
            "typeSource": (pod.placement.request.type_source if pod.placement
                           else pod.request.type_source if pod.request else None),
            "error": pod.error or None, "synced": self._inventory.has_synced(),
            "generation": snapshot.generation,
        }
        if pod.placement is None:
            report["nodes"] = []
            report["summary"] = {"passthrough": len(names)} if not pod.error else {}
            return report
        evaluation = self._evaluator.evaluate(snapshot, pod.placement, names)
        result = self._score(snapshot, pod, evaluation)
        scores = np.full(len(names), -1, dtype=np.int64)
        positions = evaluation.known[np.flatnonzero(evaluation.fit.fits)]
        scores[positions] = wire_scores(result.scores)
        messages = self._messages.messages(evaluation.code, evaluation.params)
        verdicts = [_VERDICT_NAMES[v] for v in evaluation.verdict.tolist()]
        rows = sorted(zip(names, verdicts, messages, scores.tolist(), strict=True),
                      key=lambda r: (_VERDICT_ORDER[r[1]], -r[3], r[0]))
        nodes = [{"node": name, "verdict": verdict, "reason": message or None,
                  "score": score if score >= 0 else None}
                 for name, verdict, message, score in rows]
        report["summary"] = {v: verdicts.count(v) for v in _VERDICT_ORDER}
        report["nodes"] = nodes
        return report


_VERDICT_NAMES = {0: "fits", 1: "unschedulable", 2: "unresolvable"}
_VERDICT_ORDER = {"fits": 0, "unschedulable": 1, "unresolvable": 2}


def wire_scores(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Strategy scores in [0, 100] -> extender priorities 0..10, rounding half up."""
    return np.clip(np.floor(scores / 10.0 + 0.5), 0, MAX_PRIORITY).astype(np.int64)

