"""One pod's scheduling cycle: kube-scheduler's ``CycleState`` for a stateless protocol.

kube-scheduler sends the same pod to filter, then to prioritize, and bind only names it. A
``PodCycle`` is what the extender knows about that pod between the calls, written once per step
and read by the next:

============  ===========  ================================================================
field         written by   valid while
============  ===========  ================================================================
``pod``       first call   the pod's (UID, resourceVersion): a new version starts a new cycle
``fit``       filter       the inventory generation it was computed at (``FitMemo``)
``scores``    prioritize   the same generation as ``fit``
``scored_on`` prioritize   with ``scores``: the snapshot and fit they scored (the bind's
                           explanation of the chosen node)
``held``      prioritize,  a record of what the cycle assumed last; cleared when the cycle
              bind         forgets it (a new filter, bind choosing another node), not on TTL
``passed``    filter       the pod's version: this extender's filter found a node for it, so
                           prioritize may hold GPUs for it (``scheduling/holds.py``)
``cut``       filter       the next prioritize (which takes it): filter's scoring of every
                           feasible node when the exact cut judged the pod (``cut.py``)
============  ===========  ================================================================

``explanation`` (written by bind, or by the announcer when the table lets a held cycle's
scoring go) is the breakdown of the pod's node, computed at most once from ``scores`` and
``scored_on`` (``explain.Announcer``).

The inventory, not the cycle, is where a hold takes effect (other pods' cycles must see it):
``held`` records what this cycle assumed; bind reads the inventory's holding.

``CycleTable`` keeps the cycles by UID (an LRU of ``capacity``); fit and scores are arrays over
the candidate nodes, so only the ``heavy_capacity`` most recent cycles keep them. Before a
cycle loses them the table calls ``on_let_go``: the event writer may compose a bind's
explanation dozens of pods after the bind, and kube-scheduler may bind a pod dozens of filters
after its own, and either must read the scoring the pod was placed by.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.scoring.base import ScoreResult
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, NodeInfo
from extender.platform import Platform
from extender.scheduling.pod_memo import DecodeMemo
from extender.scheduling.pods import DecodedPod, pod_key, resource_version, retyped

if TYPE_CHECKING:
    from extender.scheduling.cut import CutMemo


@dataclass(frozen=True, eq=False)
class FitMemo:
    """A ``FitResult`` and the generation it holds at."""

    generation: int
    result: FitResult
    position_of_row: npt.NDArray[np.int64]
    """(n_nodes,) position in ``result`` of each snapshot row, -1 if not evaluated."""

    def subset(self, n_nodes: int, generation: int,
               rows: npt.NDArray[np.int64]) -> FitResult | None:
        """The fit of ``rows``, if this memo covers them at ``generation``."""
        if generation != self.generation or self.position_of_row.shape[0] != n_nodes:
            return None
        positions = self.position_of_row[rows]
        if len(rows) and int(positions.min()) < 0:
            return None
        result = self.result
        if len(positions) == len(result.rows) and np.array_equal(
                positions, np.arange(len(positions))):
            return result
        return FitResult(rows=rows, code=result.code[positions],
                         params=result.params[positions], units=result.units[positions])

    @classmethod
    def of(cls, n_nodes: int, generation: int, result: FitResult) -> FitMemo:
        position_of_row = np.full(n_nodes, -1, dtype=np.int64)
        position_of_row[result.rows] = np.arange(len(result.rows), dtype=np.int64)
        return cls(generation, result, position_of_row)


@dataclass(eq=False)
class PodCycle:
    pod: DecodedPod
    fit: FitMemo | None = None
    scores: ScoreResult | None = None
    scored_on: tuple[ClusterSnapshot, FitResult] | None = None
    held: Assignment | None = None
    passed: bool = False
    cut: CutMemo | None = None
    explanation: Explanation | None = None


class Explanation(Protocol):
    """Why a pod goes to ``node`` (the node it was bound to, or holds GPUs on), computed at
    most once (``explain._Breakdown``)."""

    @property
    def node(self) -> str: ...

    def settle(self) -> None:
        """Compute it now, while the cycle's scoring is there (idempotent; never raises)."""


class CycleTable:
    def __init__(self, platform: Platform, *, capacity: int = 4096, heavy_capacity: int = 16,
                 on_new_pod: Callable[[Mapping[str, Any]], None] | None = None,
                 nodes: Callable[[], Mapping[str, NodeInfo]] | None = None,
                 on_let_go: Callable[[PodCycle], None] | None = None) -> None:
        """``on_new_pod``: called with the pod object the first time its UID is seen (the
        offline cluster admits it, so bind can find it). ``nodes``: the inventory's current
        node map, for pods typed by their node selection (``None``: no selection typing).
        ``on_let_go``: called with a cycle about to lose its fit and scores (outside the
        table's lock; it must not raise)."""
        self._on_let_go = on_let_go
        self._platform = platform
        self._nodes = nodes
        self._capacity = capacity
        self._heavy_capacity = heavy_capacity
        self._on_new_pod = on_new_pod
        self.decoded = DecodeMemo(platform)
        """Decodes by pod content: a burst's replicas decode once (``pod_memo``)."""
        self._lock = threading.Lock()
        self._by_uid: OrderedDict[str, PodCycle] = OrderedDict()
        self._heavy: OrderedDict[int, PodCycle] = OrderedDict()  # id(cycle) -> cycle

    def cycle(self, pod: Mapping[str, Any]) -> PodCycle:
        """The pod's current cycle, started (decoded) on its first call or a new version."""
        key = pod_key(pod)
        version = resource_version(pod)
        table_key = key.uid or str(key)
        with self._lock:
            known = self._by_uid.get(table_key)
            if known is not None and known.pod.resource_version == version and \
                    known.pod.key == key:
                self._by_uid.move_to_end(table_key)
            else:
                known = None
        if known is not None:
            return self._retyped(known)
        nodes = self._nodes() if self._nodes is not None else None
        cycle = PodCycle(self.decoded.decode(pod, key, version, nodes))
        with self._lock:
            first_sight = table_key not in self._by_uid
            self._by_uid[table_key] = cycle
            self._by_uid.move_to_end(table_key)
            while len(self._by_uid) > self._capacity:
                self._by_uid.popitem(last=False)
        if first_sight and self._on_new_pod is not None:
            self._on_new_pod(pod)
        return cycle

    def detached(self, pod: Mapping[str, Any]) -> PodCycle:
        """A cycle that is not kept (explain: it must leave no trace)."""
        key = pod_key(pod)
        nodes = self._nodes() if self._nodes is not None else None
        return PodCycle(self.decoded.decode(pod, key, resource_version(pod), nodes))

    def _retyped(self, cycle: PodCycle) -> PodCycle:
        """A selection-typed pod whose placement was resolved against older nodes gets its
        placement re-resolved, and its fit and scores (which depend on it) dropped."""
        if self._nodes is None or cycle.pod.typed_against is None:
            return cycle
        pod = retyped(self._platform, cycle.pod, self._nodes())
        if pod is not cycle.pod:
            self._let_go(cycle)
            cycle.pod, cycle.explanation = pod, None
        return cycle

    def get(self, uid: str) -> PodCycle | None:
        with self._lock:
            return self._by_uid.get(uid)

    def remember_fit(self, cycle: PodCycle, memo: FitMemo) -> None:
        """Store a fit on ``cycle``; the least recent heavy cycle beyond ``heavy_capacity``
        drops its fit and scores (``on_let_go`` first, outside the table's lock)."""
        if cycle.explanation is not None:  # judged again: the last scoring's explanation
            self._let_go(cycle)            # is settled, and the next starts afresh
            cycle.explanation = None
        cycle.fit = memo
        cycle.scores = None
        cycle.scored_on = None
        evicted: list[PodCycle] = []
        with self._lock:
            self._heavy[id(cycle)] = cycle
            self._heavy.move_to_end(id(cycle))
            while len(self._heavy) > self._heavy_capacity:
                evicted.append(self._heavy.popitem(last=False)[1])
        for old in evicted:
            self._let_go(old)

    def _let_go(self, cycle: PodCycle) -> None:
        if self._on_let_go is not None:
            self._on_let_go(cycle)
        cycle.fit = None
        cycle.scores = None
        cycle.scored_on = None
        cycle.cut = None


class HoldEvents(Protocol):
    """What the cycle reports about holds and scoring (``ExtenderMetrics`` is one)."""

    def reservation(self, event: str, count: int = 1) -> None: ...

    def strategy_failure(self) -> None:
        """A strategy raised; that call used the default order."""


class NullHoldEvents:
    """``HoldEvents`` that count nothing: for a cycle whose holds nobody scrapes (the shadow
    judges with the extender's own cycle and reports its ledger, not hold counters)."""

    def reservation(self, event: str, count: int = 1) -> None:
        pass

    def strategy_failure(self) -> None:
        pass
