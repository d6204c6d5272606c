"""One pod against a list of node names, vectorized: the read path shared by filter,
prioritize and explain.

Costs that matter at thousands of nodes, and what is done about them:

- names -> snapshot rows: one ``itemgetter`` into ``np.fromiter`` (no Python loop body),
  and not even that when the names equal one of the last two lists mapped on the same node
  set (``RowsMemo``): prioritize gets filter's answer, and the next pod's filter the same
  node list as this one's (~1 ms per call at 5,000 nodes; a list comparison is ~0.05 ms);
- the fit kernel: the pods of a burst share one request (``scheduling.pod_memo``), so its fit
  on every row is kept and only the rows that changed since are fitted again (``FitCache``);
  prioritize follows filter for the same pod on (a subset of) the same nodes,
  usually at the same inventory generation, so the filter's fit is kept on the pod's cycle
  (``PodCycle.fit``) and sliced instead of recomputed;
- the next pod's filter: once an answer is out, the request is judged on the last node list
  ahead of it (``evaluate_ahead``, for the scoring ahead: ``warm.py``), and a filter with the
  same request, the same names and the very same snapshot takes that evaluation as it is
  (``evaluate``'s inputs are those three and the template nodes, of which such a list has
  none), instead of mapping and fitting the same list again;
- template nodes (the ``Nodes`` form: nodes the inventory does not know) are fitted on a
  scratch snapshot (``templates``), the same way for every verb.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.fit_cache import FitCache
from extender.core.reasons import CodedRows, Reason
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero
from extender.inventory.snapshot import ClusterSnapshot
from extender.platform import Platform
from extender.scheduling.cycle import CycleTable, FitMemo, PodCycle
from extender.scheduling.handoff import SHARE_KINDS, HandoffPools
from extender.scheduling.templates import TemplateFit, fit_templates


@dataclass(frozen=True, eq=False)
class Evaluation(CodedRows):
    """Per name (in request order): the reason code, its numbers and the verdict. ``fit``
    covers the names the inventory knows, at positions ``known`` of ``names``; ``templates``
    the template nodes among the others (``None``: no Node objects were sent)."""

    snapshot: ClusterSnapshot
    names: Sequence[str]
    code: npt.NDArray[np.int8]
    params: npt.NDArray[np.int64]
    fit: FitResult
    known: npt.NDArray[np.int64]
    templates: TemplateFit | None = None


class RowsMemo:
    """The last two name lists mapped to rows, with the snapshot's node-name tuple they were
    mapped on: the inventory makes a new tuple whenever a node comes or goes (and copies its
    index before changing it), so the same tuple means the same rows for equal names."""

    def __init__(self) -> None:
        self._entries: tuple[tuple[tuple[str, ...], list[str], npt.NDArray[np.int64]], ...] = ()
        self.hits = 0

    def rows(self, snapshot: ClusterSnapshot, names: Sequence[str]) -> npt.NDArray[np.int64]:
        """(len(names),) the snapshot row of each name, -1 where unknown (read-only)."""
        for node_names, known, rows in self._entries:  # a tuple: replaced, never mutated
            if node_names is snapshot.node_names and len(known) == len(names) \
                    and known == names:
                self.hits += 1
                return rows
        rows = _rows_of(snapshot.node_index, names)
        rows.flags.writeable = False
        if isinstance(names, list):  # a copy: the caller's list may change later
            self._entries = ((snapshot.node_names, list(names), rows), *self._entries[:1])
        return rows


def _rows_of(index: Mapping[str, int], names: Sequence[str]) -> npt.NDArray[np.int64]:
    """(len(names),) each name's row, -1 where unknown. ``itemgetter`` looks every name up in
    one C call (a third less time than ``map(dict.get)`` into ``np.fromiter``); a
    name the index lacks (a template node, a node being deleted) falls back to the slower way,
    which gives it -1."""
    if len(names) > 1:
        try:
            return np.fromiter(itemgetter(*names)(index), dtype=np.int64, count=len(names))
        except KeyError:
            pass
    return np.fromiter(map(index.get, names, repeat(-1)), dtype=np.int64, count=len(names))


class Evaluator:
    def __init__(self, platform: Platform, cycles: CycleTable, *,
                 check_cpu_memory: bool = False) -> None:
        self._platform = platform
        self._cycles = cycles
        self.fits = FitCache(check_cpu_memory=check_cpu_memory)
        """The fit of a burst's shared request, recomputed only on the rows that changed."""
        self.handoff = HandoffPools(platform.config.handoff)
        """Which pools cannot hand a share over (their rows refuse VRAM shares and
        fractions)."""
        self.fit_cache_hits = 0
        """Calls that reused the cycle's fit instead of recomputing it (a benign race)."""
        self.rows = RowsMemo()
        self._ahead: tuple[PlacementRequest, Evaluation] | None = None
        """The last ``evaluate_ahead``: its request, and what it judged."""
        self.taken_ahead = 0
        """Calls answered with the evaluation made ahead
        (``gpu_extender_evaluations_taken_ahead_total``)."""

    def evaluate_ahead(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
                       names: Sequence[str]) -> Evaluation:
        """``evaluate``, kept for the next call that asks the same (``warm.py``: the next
        pod of a burst, judged while kube-scheduler runs its own filters for it)."""
        evaluation = self.evaluate(snapshot, placement, names)
        self._ahead = (placement, evaluation)
        return evaluation

    def evaluate(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
                 names: Sequence[str], *, cycle: PodCycle | None = None,
                 nodes: Sequence[Mapping[str, Any]] | None = None) -> Evaluation:
        """``cycle``: reuse (and keep) its fit; ``nodes``: the Node objects of ``names``, if
        the call sent them (unknown ones are judged as templates)."""
        ahead = self._taken_ahead(snapshot, placement, names)
        if ahead is not None:
            if cycle is not None:
                self._cycles.remember_fit(cycle, FitMemo.of(snapshot.n_nodes,
                                                            snapshot.generation, ahead.fit))
            return ahead
        n = len(names)
        all_rows = self.rows.rows(snapshot, names)
        known_mask = all_rows >= 0
        all_known = bool(known_mask.all())
        known = np.arange(n, dtype=np.int64) if all_known else flat_nonzero(known_mask)
        rows = all_rows if all_known else all_rows[known]
        result = self._fit(snapshot, placement, rows, cycle)
        templates = None
        if all_known:
            code, params = result.code, result.params
        else:
            code = np.full(n, Reason.UNKNOWN_NODE, dtype=np.int8)
            params = np.zeros((n, 3), dtype=np.int64)
            code[known] = result.code
            params[known] = result.params
            if nodes is not None:
                unknown = flat_nonzero(~known_mask)
                templates = fit_templates(self._platform, placement,
                                          [nodes[i] for i in unknown.tolist()], unknown)
                code[unknown] = templates.fit.code
                params[unknown] = templates.fit.params
        return Evaluation(snapshot, names, code, params, result, known, templates)

    def _taken_ahead(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
                     names: Sequence[str]) -> Evaluation | None:
        """The evaluation made ahead, if it judged exactly this: the same snapshot object
        (its arrays never change), the same request object, equal names, every one of them
        known (so no template node, whatever ``nodes`` says)."""
        kept = self._ahead
        if kept is None:
            return None
        request, evaluation = kept
        if evaluation.snapshot is not snapshot or request is not placement or \
                len(evaluation.known) != len(names) or evaluation.names != names:
            return None
        self.taken_ahead += 1
        return evaluation

    def _fit(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
             rows: npt.NDArray[np.int64], cycle: PodCycle | None) -> FitResult:
        memo = cycle.fit if cycle is not None else None
        if memo is not None:
            cached = memo.subset(snapshot.n_nodes, snapshot.generation, rows)
            if cached is not None:
                self.fit_cache_hits += 1
                return cached
        result = self.fits.fit(snapshot, placement, rows)
        if placement.request.kind in SHARE_KINDS:
            result = self._refuse_no_handoff(snapshot, result)
        if cycle is not None:
            self._cycles.remember_fit(cycle, FitMemo.of(snapshot.n_nodes,
                                                        snapshot.generation, result))
        return result

    def _refuse_no_handoff(self, snapshot: ClusterSnapshot, result: FitResult) -> FitResult:
        """A share on a pool whose handoff is ``none`` could be booked but never reach its
        container: unresolvable there, with what to ask instead."""
        refused = self.handoff.refused_rows(snapshot)[result.rows]
        if not refused.any():
            return result
        code = result.code.copy()
        params = result.params.copy()
        code[refused] = Reason.NO_HANDOFF
        params[refused] = 0
        return FitResult(rows=result.rows, code=code, params=params, units=result.units)
