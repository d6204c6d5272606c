"""Why a pod went where it went: the chosen node against the runner-up, term by term.

Computed once per bind, for two rows (the chosen node and the best other one) on the snapshot
prioritize scored, never for every node: prioritize stays a vectorized score. The strategy
says what its terms are if it implements ``Explainer``; otherwise only the scores are shown.

The result is kept per pod UID (an LRU: ``PlacementRecords``) for ``/debug/explain`` of a bound
pod, and turned into the Normal event's text (``summary``).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult, fit
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero
from extender.core.scoring.base import NodeTerms, ScoreResult, Term, deciding_term
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, PodKey
from extender.scheduling.cycle import PodCycle
from extender.scheduling.prioritize import Scorer

_log = logging.getLogger(__name__)

EVENT_REASON = "GpuAssigned"
ANNOUNCED_KEPT = 1024

ExplainRows = Callable[[ClusterSnapshot, PlacementRequest, FitResult, npt.NDArray[np.int64]],
                       list[NodeTerms] | None]
"""The strategy's ``explain`` behind the scorer's lock; ``None``: the strategy has none."""


@dataclass(frozen=True)
class NodeBreakdown:
    node: str
    score: float
    """The strategy's score in [0, 100]."""
    terms: NodeTerms | None
    """``None``: the strategy does not explain itself (``Explainer``)."""

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "score": round(self.score, 3),
                "terms": None if self.terms is None else [_term_json(t) for t in self.terms]}


@dataclass(frozen=True)
class PlacementBreakdown:
    """The chosen node against the runner-up (``None``: it was the only node that fit)."""

    strategy: str
    generation: int
    """The inventory generation prioritize scored."""
    chosen: NodeBreakdown
    runner_up: NodeBreakdown | None
    candidates: int
    """Nodes that fit."""

    @property
    def decided_by(self) -> Term | None:
        if self.runner_up is None or self.chosen.terms is None or self.runner_up.terms is None:
            return None
        return deciding_term(self.chosen.terms, self.runner_up.terms)

    def reason(self) -> str:
        """Why the chosen node, in a few words ("cheapest fitting type")."""
        if self.runner_up is None:
            return "the only node that fits" if self.candidates <= 1 else \
                "no other node was scored"
        decided = self.decided_by
        if decided is not None:
            phrase = decided.decides or f"better {decided.name}"
            detail = self._largest_gpu_difference() if decided.unit == "GPU" else None
            return f"{phrase} ({detail})" if detail else phrase
        if self.chosen.terms is None:
            return f"score {self.chosen.score:g} against {self.runner_up.score:g}"
        return "tie with the runner-up"

    def _largest_gpu_difference(self) -> str | None:
        """A GPU key term sums the GPU terms shown beside it: the one that differs most
        from the runner-up's, as "typed claim 0.00 against 1.00 GPU on node-b"."""
        assert self.runner_up is not None
        rival = {t.name: t for t in self.runner_up.terms or () if t.key is None}
        best: tuple[float, Term, Term] | None = None
        for term in self.chosen.terms or ():
            other = rival.get(term.name)
            if term.key is not None or term.unit != "GPU" or other is None:
                continue
            gap = other.value - term.value
            if gap > 1e-9 and (best is None or gap > best[0]):
                best = (gap, term, other)
        if best is None:
            return None
        _, term, other = best
        return (f"{term.name} {term.value:+.2f} against {other.value:+.2f} GPU on "
                f"{self.runner_up.node}")

    def term(self, name: str) -> Term | None:
        return next((t for t in self.chosen.terms or () if t.name == name), None)

    def to_json(self) -> dict[str, Any]:
        decided = self.decided_by
        return {"strategy": self.strategy, "generation": self.generation,
                "candidates": self.candidates, "reason": self.reason(),
                "decidedBy": decided.name if decided is not None else None,
                "chosen": self.chosen.to_json(),
                "runnerUp": self.runner_up.to_json() if self.runner_up else None}


def _term_json(term: Term) -> dict[str, Any]:
    out: dict[str, Any] = {"name": term.name, "value": round(term.value, 6), "unit": term.unit}
    if term.before is not None:
        out["before"] = round(term.before, 6)
    if term.after is not None:
        out["after"] = round(term.after, 6)
    if term.key is not None:
        out["key"] = term.key
    return out


def chosen_and_runner_up(rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float64],
                         row: int) -> tuple[int, int | None] | None:
    """(position of ``row`` in ``rows``, position of the best-scored other row, the first
    of equals; ``None`` if there is none), ``None`` if ``row`` is not in ``rows``. Two passes
    over the scored rows (the match, then the scores with ``row`` masked)."""
    positions = flat_nonzero(rows == row)
    if len(positions) == 0:
        return None
    if len(positions) == len(rows):
        return int(positions[0]), None
    others = scores.astype(np.float64, copy=True)
    others[positions] = -np.inf
    return int(positions[0]), int(np.argmax(others))


def breakdown(strategy: str, explain_rows: ExplainRows, node: str, *,
              snapshot: ClusterSnapshot, request: PlacementRequest, fitted: FitResult,
              result: ScoreResult, candidates: int | None = None
              ) -> PlacementBreakdown | None:
    """The breakdown of ``node`` against the best-scored other fitting node, on the
    ``snapshot`` and ``result`` prioritize scored; ``None`` if ``node`` was not among them.
    ``candidates``: the nodes that fit, if more than ``result`` scored."""
    row = snapshot.node_index.get(node)
    if row is None:
        return None
    pair = chosen_and_runner_up(result.rows, result.scores, row)
    if pair is None:
        return None
    at, runner = pair
    picked = [at] if runner is None else [at, runner]
    rows = result.rows[picked]
    terms = explain_rows(snapshot, request, fitted, rows)
    parts = [NodeBreakdown(snapshot.node_names[int(r)], float(result.scores[p]),
                           terms[i] if terms is not None else None)
             for i, (p, r) in enumerate(zip(picked, rows.tolist(), strict=True))]
    return PlacementBreakdown(strategy, snapshot.generation, parts[0],
                              parts[1] if len(parts) > 1 else None,
                              max(len(result.rows), candidates or 0))


def assignment_json(assignment: Assignment) -> dict[str, Any]:
    return {"node": assignment.node, "gpus": list(assignment.gpu_indices),
            "type": assignment.type_id or None, "kind": assignment.kind.value,
            "grants": [{"index": g.index, "vramMiB": g.vram_mib, "whole": g.whole,
                        "replica": g.replica, "mig": g.mig_profile}
                       for g in assignment.grants]}


def event_message(assignment: Assignment | None, node: str,
                  explained: PlacementBreakdown | None, *, why: str | None = None) -> str:
    """The Normal event's text: "assigned GPU 0,3 (a100-80gb) on node X: cheapest fitting
    type, fragmentation +0.02 GPU, $2.40/h". ``why``: ``explained.reason()``, if the caller
    has it already."""
    if assignment is None or not assignment.grants:
        return f"bound to node {node}; the pod holds no GPU"
    gpus = ",".join(str(i) for i in assignment.gpu_indices)
    profiles = sorted({g.mig_profile for g in assignment.grants if g.mig_profile})
    what = assignment.type_id or "unknown type"
    if profiles:
        what += f", MIG {'+'.join(profiles)}"
    text = f"assigned GPU {gpus} ({what}) on node {node}"
    if explained is None:
        return text
    parts = [explained.reason() if why is None else why]
    fragmentation = explained.term("fragmentation")
    if fragmentation is not None:
        parts.append(f"fragmentation {fragmentation.value:+.2f} GPU")
    price = explained.term("price")
    if price is not None:
        parts.append(f"${price.value:.2f}/h")
    return f"{text}: {', '.join(parts)}"


class PlacementRecords:
    """The last breakdowns by pod UID (an LRU of ``capacity``): what ``explain`` of a bound
    pod shows. Lost on restart (then explain says so); a leaf lock."""

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._by_uid: OrderedDict[str, PlacementBreakdown] = OrderedDict()

    def put(self, uid: str, explained: PlacementBreakdown) -> None:
        with self._lock:
            self._by_uid[uid] = explained
            self._by_uid.move_to_end(uid)
            while len(self._by_uid) > self._capacity:
                self._by_uid.popitem(last=False)

    def get(self, uid: str) -> PlacementBreakdown | None:
        with self._lock:
            return self._by_uid.get(uid)


class _Breakdown:
    """One placement's breakdown of ``node``, computed once: where its event is composed, or
    earlier, when the cycle table lets the cycle's scoring go before that (``settle``: a bound
    cycle's, or a held one's whose bind has not come yet); either thread may come first, the
    other reads the same result. Never raises: an explanation must never cost a
    placement (a failure is logged, and the event says where the GPUs are without why)."""

    def __init__(self, compute: Callable[[], PlacementBreakdown | None], key: PodKey,
                 node: str) -> None:
        self._compute: Callable[[], PlacementBreakdown | None] | None = compute
        self._key = key
        self._node = node
        self._lock = threading.Lock()
        self._value: PlacementBreakdown | None = None

    @property
    def node(self) -> str:
        return self._node

    def settle(self) -> None:
        self.get()

    def get(self) -> PlacementBreakdown | None:
        with self._lock:
            compute, self._compute = self._compute, None  # computed once; the cycle let go
            if compute is not None:
                try:
                    self._value = compute()
                except Exception:
                    _log.exception("could not explain placement", extra={"fields": {
                        "pod": str(self._key), "node": self._node}})
            return self._value


class Announcer:
    """After each bind: the breakdown of the chosen node (two rows, on the snapshot
    prioritize scored), kept for explain, as a Normal event on the pod and one log line.
    Never raises: the pod is bound already.

    The bind only hands ``notify`` a closure: the breakdown, the record and the log line are
    computed where the event is written (online: the event queue's thread, off the bind
    path; the snapshot and the scores it reads are immutable). The breakdown reads the
    cycle's scoring, which the cycle table lets go once ``heavy_capacity`` newer cycles have
    scored (``let_go``): a writer that far behind, or a bind that comes that late after its
    pod's filter (a burst), finds it computed already (``_Breakdown``, the cycle's
    ``explanation``)."""

    def __init__(self, scorer: Scorer, records: PlacementRecords,
                 notify: Callable[[PodKey, str, Callable[[], str]], None]) -> None:
        self._scorer = scorer
        self._strategy = type(scorer.strategy).NAME
        self.records = records
        self._notify = notify
        self._lock = threading.Lock()
        """A leaf: a cycle's ``explanation`` read and replaced as one step (bind and the
        table's let-go run on different threads)."""
        self._announced: OrderedDict[str, _Breakdown] = OrderedDict()
        """Bound pods' breakdowns whose event is not composed yet (the writer gathers a
        burst's events): what ``recorded`` answers meanwhile. The last ``ANNOUNCED_KEPT``
        (an event the full queue dropped is never composed)."""

    def __call__(self, cycle: PodCycle, key: PodKey, node: str,
                 assignment: Assignment | None, chosen_on: ClusterSnapshot | None) -> None:
        with self._lock:  # the table may be letting this cycle go on the filter's thread
            pending = cycle.explanation
            if not isinstance(pending, _Breakdown) or pending.node != node or \
                    chosen_on is not None:  # not the held node's, or chosen afresh at bind
                pending = self._explanation(cycle, node, chosen_on)
            self._announced[key.uid] = pending
            self._announced.move_to_end(key.uid)
            while len(self._announced) > ANNOUNCED_KEPT:
                self._announced.popitem(last=False)
        self._notify(key, EVENT_REASON, lambda: self.compose(pending, key, node, assignment))

    def recorded(self, uid: str) -> PlacementBreakdown | None:
        """The breakdown of a pod this process bound: kept for explain once its event is
        composed, and before that the one its bind announced (computed now if need be)."""
        kept = self.records.get(uid)
        if kept is not None:
            return kept
        with self._lock:
            pending = self._announced.get(uid)
        if pending is None:  # composed meanwhile (kept first, then let go of here)
            return self.records.get(uid)
        return pending.get()

    def let_go(self, cycle: PodCycle) -> None:
        """The cycle table is letting ``cycle``'s scoring go (``CycleTable(on_let_go=...)``):
        settle its bind's breakdown now, and for a cycle that holds GPUs and is not bound yet,
        the breakdown of the held node, which its bind will take."""
        with self._lock:
            pending = cycle.explanation
            held = cycle.held
            if pending is None and held is not None:
                pending = self._explanation(cycle, held.node, None)
        if pending is not None:
            pending.settle()

    def _explanation(self, cycle: PodCycle, node: str, chosen_on: ClusterSnapshot | None
                     ) -> _Breakdown:
        """A new breakdown of ``node`` for ``cycle``, kept on it; under ``_lock``."""
        pending = _Breakdown(lambda: self.breakdown_of(cycle, node, chosen_on),
                             cycle.pod.key, node)
        cycle.explanation = pending
        return pending

    def compose(self, pending: _Breakdown, key: PodKey, node: str,
                assignment: Assignment | None) -> str:
        """The breakdown (kept for explain), the log line, and the event's text."""
        explained = pending.get()
        if explained is not None:
            self.records.put(key.uid, explained)
        with self._lock:
            if self._announced.get(key.uid) is pending:
                del self._announced[key.uid]
        why = explained.reason() if explained is not None else None
        message = event_message(assignment, node, explained, why=why)
        fields: dict[str, Any] = {"pod": str(key), "uid": key.uid, "node": node,
                                  "outcome": "bound", "reason": message}
        if assignment is not None:
            fields |= {"gpus": list(assignment.gpu_indices), "gpu_type": assignment.type_id,
                       "kind": assignment.kind.value}
        if explained is not None:
            fields |= {"strategy": explained.strategy, "score": explained.chosen.score,
                       "candidates": explained.candidates, "why": why,
                       "runner_up": explained.runner_up.node if explained.runner_up else None}
            for name, field in (("fragmentation", "fragmentation_gpu"),
                                ("price", "price_per_hour")):
                term = explained.term(name)
                if term is not None:
                    fields[field] = round(term.value, 6)
        _log.info("pod placed", extra={"fields": fields})
        return message

    def breakdown_of(self, cycle: PodCycle, node: str, chosen_on: ClusterSnapshot | None
                     ) -> PlacementBreakdown | None:
        """The breakdown of ``node`` for ``cycle`` (``chosen_on``: the snapshot a fresh
        choice at bind was made on), ``None`` where nothing was scored to compare."""
        placement, scored, result = cycle.pod.placement, cycle.scored_on, cycle.scores
        if placement is None:
            return None
        if scored is not None and result is not None:
            snapshot, fitted = scored
            return breakdown(self._strategy, self._scorer.explain, node, snapshot=snapshot,
                             request=placement, fitted=fitted, result=result)
        if chosen_on is None or node not in chosen_on.node_index:
            return None  # bound without a prioritize of this cycle (a restart, a retry)
        # kube-scheduler skips prioritize when one node passes filter: score that one
        # node on the snapshot the bind chose its GPUs on
        one = fit(chosen_on, placement, np.array([chosen_on.node_index[node]], np.int64))
        memo = cycle.fit
        candidates = int(memo.result.fits.sum()) if memo is not None else None
        return breakdown(self._strategy, self._scorer.explain, node, snapshot=chosen_on,
                         request=placement, fitted=one,
                         result=self._scorer.score(chosen_on, placement, one),
                         candidates=candidates)
