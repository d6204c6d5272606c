"""Failed nodes grouped by message, and the messages themselves: the filter answer's shape.

A 5,000-node answer has few distinct (reason, numbers) rows, and the same ones recur from pod to
pod, so messages are memoized and identical rows grouped with one ``np.unique``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.core.reasons import (
    FITS_CODE,
    POD_DEPENDENT,
    VERDICT_BY_CODE,
    format_reason,
    format_reason_for,
)
from extender.core.rowops import flat_nonzero
from extender.model import GpuRequest, Verdict
from extender.scheduling.evaluate import Evaluation
from extender.server.answers import NodeGroup, pick


class ReasonMessages:
    """Formats reason messages, memoized by (code, numbers): a 5,000-node answer has few
    distinct ones, and the same ones recur from pod to pod."""

    def __init__(self, catalog: Catalog, *, limit: int = 65536) -> None:
        self._catalog = catalog
        self._limit = limit
        self._cache: dict[tuple[int, int, int, int], str] = {}
        self._last: tuple[GpuRequest | None, dict[tuple[int, int, int, int], str]] = (None, {})
        """The last request object and its pod-dependent messages (a burst's replicas share
        theirs: ``scheduling.pod_memo``); replaced as one tuple, so a thread never writes
        into another request's texts."""

    def messages(self, code: npt.NDArray[np.int8], params: npt.NDArray[np.int64],
                 request: GpuRequest | None = None) -> list[str]:
        """``request``: the pod's, for the reasons whose text names what the pod asked
        ("the pod accepts a100-80gb only (label ...)"); those are memoized for the last
        request object only."""
        if request is not None and POD_DEPENDENT & set(code.tolist()):
            last = self._last
            if last[0] is not request:
                last = self._last = (request, {})
            return self._texts(code, params, last[1],
                               lambda *key: format_reason_for(self._catalog, request, *key))
        return self._texts(code, params, self._cache,
                           lambda *key: format_reason(self._catalog, *key))

    def _texts(self, code: npt.NDArray[np.int8], params: npt.NDArray[np.int64],
               cache: dict[tuple[int, int, int, int], str],
               text_of: Callable[[int, int, int, int], str]) -> list[str]:
        if len(cache) > self._limit:
            cache.clear()
        out = []
        keys = zip(code.tolist(), params[:, 0].tolist(), params[:, 1].tolist(),
                   params[:, 2].tolist(), strict=True)
        for key in keys:
            text = cache.get(key)
            if text is None:
                text = text_of(*key)
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
    feasible = pick(names, flat_nonzero(code == FITS_CODE))
    failed_positions = flat_nonzero(code != FITS_CODE)
    if len(failed_positions) == 0:
        return feasible, [], []
    codes = code[failed_positions].astype(np.int64)
    params = evaluation.params[failed_positions]
    keys = _packed_keys(codes, params)
    if keys is None:  # numbers too large to pack: compare whole rows (slower, same result)
        rows = np.concatenate([codes[:, None], params], axis=1)
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(inverse, kind="stable")
        ends = np.cumsum(np.bincount(inverse, minlength=len(first))).tolist()
    else:
        first, order, ends = _sorted_groups(keys)
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


def _sorted_groups(keys: npt.NDArray[np.int64]
                   ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], list[int]]:
    """What ``np.unique(keys, return_index=True, return_inverse=True)`` and a stable sort of
    the inverse give, from one stable sort of ``keys``: (first position of each distinct key,
    in key order; every position grouped by key, in position order within a group; each
    group's end in that order). The inverse is a monotone map of the keys, so sorting either
    stably orders the positions alike, and a group's first position is its smallest."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = flat_nonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = [*starts[1:].tolist(), len(keys)]
    return order[starts], order, ends


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
