"""One pod against a list of node names, vectorized: the shared read path of filter,
prioritize and explain.

Costs that matter at thousands of nodes, and what is done about them:

- names -> snapshot rows: one ``map(dict.get)`` into ``np.fromiter`` (no Python loop body);
- the fit kernel: prioritize follows filter for the same pod on (a subset of) the same nodes,
  usually at the same inventory generation, so the filter's ``FitResult`` is kept per pod UID
  and sliced instead of recomputed;
- reason messages: identical (code, numbers) rows give identical text, so formatted messages
  are memoized across calls.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.core.fit import FitResult, fit
from extender.core.reasons import (
    POD_DEPENDENT,
    VERDICT_BY_CODE,
    Reason,
    format_reason,
    format_reason_for,
)
from extender.core.request import PlacementRequest
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import GpuRequest, Verdict
from extender.server.answers import NodeGroup, pick


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Per name (in request order): the reason code, its numbers and the verdict. ``fit``
    covers the names the inventory knows, at positions ``known`` of ``names``."""

    snapshot: ClusterSnapshot
    names: Sequence[str]
    code: npt.NDArray[np.int8]
    params: npt.NDArray[np.int64]
    fit: FitResult
    known: npt.NDArray[np.int64]

    @property
    def fits(self) -> npt.NDArray[np.bool_]:
        return self.code == Reason.FITS

    @property
    def verdict(self) -> npt.NDArray[np.int8]:
        return VERDICT_BY_CODE[self.code]


@dataclass(frozen=True, eq=False)
class _CachedFit:
    generation: int
    result: FitResult
    position_of_row: npt.NDArray[np.int64]
    """(n_nodes,) position in ``result`` of each snapshot row, -1 if not evaluated."""


class Evaluator:
    def __init__(self, *, check_cpu_memory: bool = False, cache_size: int = 16) -> None:
        self._check_cpu_memory = check_cpu_memory
        self._cache_size = cache_size
        self._cache: OrderedDict[str, _CachedFit] = OrderedDict()
        self._lock = threading.Lock()
        self.fit_cache_hits = 0

    def evaluate(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
                 names: Sequence[str], *, cache_key: str = "") -> Evaluation:
        n = len(names)
        all_rows = np.fromiter(map(snapshot.node_index.get, names, repeat(-1)),
                               dtype=np.int64, count=n)
        known_mask = all_rows >= 0
        all_known = bool(known_mask.all())
        known = np.arange(n, dtype=np.int64) if all_known else np.flatnonzero(known_mask)
        rows = all_rows if all_known else all_rows[known]
        result = self._fit(snapshot, placement, rows, cache_key)
        if all_known:
            code, params = result.code, result.params
        else:
            code = np.full(n, Reason.UNKNOWN_NODE, dtype=np.int8)
            params = np.zeros((n, 3), dtype=np.int64)
            code[known] = result.code
            params[known] = result.params
        return Evaluation(snapshot, names, code, params, result, known)

    def _fit(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
             rows: npt.NDArray[np.int64], cache_key: str) -> FitResult:
        if cache_key:
            with self._lock:
                cached = self._cache.get(cache_key)
            if cached is not None and cached.generation == snapshot.generation and \
                    cached.position_of_row.shape[0] == snapshot.n_nodes:
                positions = cached.position_of_row[rows]
                if len(rows) == 0 or int(positions.min()) >= 0:
                    self.fit_cache_hits += 1
                    return _subset(cached.result, rows, positions)
        result = fit(snapshot, placement, rows, check_cpu_memory=self._check_cpu_memory)
        if cache_key:
            position_of_row = np.full(snapshot.n_nodes, -1, dtype=np.int64)
            position_of_row[rows] = np.arange(len(rows), dtype=np.int64)
            entry = _CachedFit(snapshot.generation, result, position_of_row)
            with self._lock:
                self._cache[cache_key] = entry
                self._cache.move_to_end(cache_key)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return result


def _subset(result: FitResult, rows: npt.NDArray[np.int64],
            positions: npt.NDArray[np.int64]) -> FitResult:
    if len(positions) == len(result.rows) and np.array_equal(positions,
                                                             np.arange(len(positions))):
        return result
    return FitResult(rows=rows, code=result.code[positions], params=result.params[positions],
                     units=result.units[positions])


class ReasonMessages:
    """Formats reason messages, memoized by (code, numbers): a 5,000-node answer has few
    distinct ones, and the same ones recur from pod to pod."""

    def __init__(self, catalog: Catalog, *, limit: int = 65536) -> None:
        self._catalog = catalog
        self._limit = limit
        self._cache: dict[tuple[int, int, int, int], str] = {}

    def messages(self, code: npt.NDArray[np.int8], params: npt.NDArray[np.int64],
                 request: GpuRequest | None = None) -> list[str]:
        if request is not None and POD_DEPENDENT & set(code.tolist()):
            return [format_reason_for(self._catalog, request, *key) for key in zip(
                code.tolist(), params[:, 0].tolist(), params[:, 1].tolist(),
                params[:, 2].tolist(), strict=True)]
        cache = self._cache
        if len(cache) > self._limit:
            cache.clear()
        out = []
        keys = zip(code.tolist(), params[:, 0].tolist(), params[:, 1].tolist(),
                   params[:, 2].tolist(), strict=True)
        for key in keys:
            text = cache.get(key)
            if text is None:
                text = format_reason(self._catalog, *key)
                cache[key] = text
            out.append(text)
        return out


def group_failures(evaluation: Evaluation, messages: ReasonMessages,
                   request: GpuRequest | None = None
                   ) -> tuple[list[str], list[NodeGroup], list[NodeGroup]]:
    """``(feasible names, FailedNodes groups, FailedAndUnresolvableNodes groups)``: failed
    nodes grouped by identical (code, numbers), i.e. identical message, found with one
    ``np.unique`` over a packed 1-D key."""
    names = evaluation.names
    code = evaluation.code
    feasible = pick(names, np.flatnonzero(code == Reason.FITS))
    failed_positions = np.flatnonzero(code != Reason.FITS)
    if len(failed_positions) == 0:
        return feasible, [], []
    codes = code[failed_positions].astype(np.int64)
    params = evaluation.params[failed_positions]
    keys = _packed_keys(codes, params)
    if keys is None:  # numbers too large to pack: compare whole rows (slower, same result)
        rows = np.concatenate([codes[:, None], params], axis=1)
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    ends = np.cumsum(np.bincount(inverse, minlength=len(first))).tolist()
    grouped_positions = failed_positions[order]
    texts = messages.messages(codes[first].astype(np.int8), params[first], request)
    hopeless = (VERDICT_BY_CODE[codes[first]] == Verdict.UNRESOLVABLE.value).tolist()
    failed: list[NodeGroup] = []
    unresolvable: list[NodeGroup] = []
    start = 0
    for end, text, unresolvable_group in zip(ends, texts, hopeless, strict=True):
        group = NodeGroup(pick(names, grouped_positions[start:end]), text)
        (unresolvable if unresolvable_group else failed).append(group)
        start = end
    return feasible, failed, unresolvable


_LOW_BITS = 18
_MID_BITS = 20


def _packed_keys(codes: npt.NDArray[np.int64], params: npt.NDArray[np.int64]
                 ) -> npt.NDArray[np.int64] | None:
    """code | a | b | c in one int64 (5 + 20 + 20 + 18 bits), if the numbers fit."""
    if len(params) and (int(params.min()) < 0 or int(params[:, :2].max()) >> _MID_BITS
                        or int(params[:, 2].max()) >> _LOW_BITS):
        return None
    return ((codes << (2 * _MID_BITS + _LOW_BITS)) | (params[:, 0] << (_MID_BITS + _LOW_BITS))
            | (params[:, 1] << _LOW_BITS) | params[:, 2])
