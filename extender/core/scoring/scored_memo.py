"""What a strategy computed for the last few ``score`` calls, for its ``explain`` of the same
call: the explanation of a placement reads the chosen node's and the runner-up's terms out of
the arrays the score already built, instead of computing them again for two rows.

Why: after every bind the Normal event's text and the record ``/debug/explain`` shows need the
terms of two nodes; recomputing them (fragmentation before/after, stranded memory, claims,
keys) cost ~9 % of the extender's Python in a 1,000-node burst (py-spy, issue 22), while
slicing two positions out of the score's arrays costs a few microseconds.

Keyed by identity: the ``FitResult`` a score was given (prioritize keeps that very object on
the pod's cycle and hands it to the explanation), with the snapshot and the request it was
scored on. A miss (an old call pushed out, a fit the strategy never scored) just computes as
before; what is kept is only ever read, never changed.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero
from extender.inventory.snapshot import ClusterSnapshot

T = TypeVar("T")

DEFAULT_CALLS = 32
"""Score calls remembered: an explanation is composed a few pods after its prioritize (the
event writer drains behind the burst); 32 calls of 1,000 nodes keep ~3 MB alive."""


class ScoredMemo(Generic[T]):
    """The last ``calls`` score results by (fit, snapshot, request) identity; not locked (the
    strategy's caller serialises score and explain: ``scheduling.prioritize.Scorer``)."""

    def __init__(self, calls: int = DEFAULT_CALLS) -> None:
        self._calls = calls
        self._kept: list[tuple[FitResult, ClusterSnapshot, PlacementRequest, T]] = []
        self.hits = 0

    def keep(self, fit: FitResult, snapshot: ClusterSnapshot, req: PlacementRequest,
             value: T) -> None:
        self._kept.insert(0, (fit, snapshot, req, value))
        del self._kept[self._calls:]

    def get(self, fit: FitResult, snapshot: ClusterSnapshot, req: PlacementRequest
            ) -> T | None:
        for kept_fit, kept_snapshot, kept_req, value in self._kept:
            if kept_fit is fit and kept_snapshot is snapshot and kept_req is req:
                self.hits += 1
                return value
        return None


def positions_of(scored: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
                 ) -> npt.NDArray[np.int64] | None:
    """Where each of ``rows`` is in ``scored`` (the first place), ``None`` if one is not."""
    found = [flat_nonzero(scored == r) for r in rows.tolist()]
    if any(len(hits) == 0 for hits in found):
        return None
    return np.array([int(hits[0]) for hits in found], dtype=np.int64)
