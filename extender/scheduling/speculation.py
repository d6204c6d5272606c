"""The next pod's scores, computed before it asks, and taken only where they are exact.

A burst's pods ask one request on one node list, and between two of them the books change
only where the last one was held. Once an answer is out (``warm.py``), the worker scores the
request on the last filter's nodes as the books now are: the scoring of every feasible node the
next filter would do (issue 22: ~45 % of a 1,000-node filter's CPU), done while kube-scheduler
runs its own filters for that pod. ``Scorer.score`` takes it instead of scoring when every
input is the same:

- the snapshot object (the inventory makes a new one whenever its arrays change: a hold, an
  expiry, a node or pod event);
- the request object (``PlacementRequest`` compares by identity; a burst's replicas decode
  to one: ``pod_memo.py``);
- the strategy's inputs outside the snapshot (``Speculative.speculation_key``: the default
  strategy's learned workload mix), read equal before and after the speculation scored and
  again when the call comes;
- the set of rows that fit. kube-scheduler lists the feasible nodes in a different order on
  every call (its filter runs them in parallel), so the scores are permuted to the call's
  order: exact for a strategy whose fitting rows' scores depend on that set alone, not on its
  order nor on the rows that do not fit, which is ``Speculative``'s promise, checked for every
  strategy that makes it (``tests/core/test_strategy_contract.py``).

Anything else (another request, a node list that fits other rows, a hold or event in between)
scores as before: a speculation is never more than a scoring done early. One that no call takes
is CPU spent for nothing, so ``SpeculationPace`` backs off after a run of them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.scoring.base import ScoreResult
from extender.inventory.snapshot import ClusterSnapshot


@dataclass(frozen=True, eq=False)
class Speculation:
    """A strategy's scoring of ``fit`` on ``snapshot``, with the key of its other inputs."""

    snapshot: ClusterSnapshot
    placement: PlacementRequest
    key: Hashable
    fit: FitResult
    result: ScoreResult
    position_of_row: npt.NDArray[np.intp]
    """(n_nodes,) position in ``result`` of each snapshot row, -1 where it did not fit."""

    @classmethod
    def of(cls, snapshot: ClusterSnapshot, placement: PlacementRequest, key: Hashable,
           fit: FitResult, result: ScoreResult) -> Speculation:
        position_of_row = np.full(snapshot.n_nodes, -1, dtype=np.intp)
        position_of_row[result.rows] = np.arange(len(result.rows))
        return cls(snapshot, placement, key, fit, result, position_of_row)

    def holds_for(self, snapshot: ClusterSnapshot, placement: PlacementRequest,
                  key: Hashable) -> bool:
        """Were these scores computed from these inputs?"""
        return snapshot is self.snapshot and placement is self.placement and key == self.key

    def scores_for(self, fit: FitResult) -> ScoreResult | None:
        """The scores of ``fit``'s fitting rows, in its order; ``None`` unless the same rows
        fit (each once) as in the speculation's fit."""
        if fit is self.fit:
            return self.result  # scored on this very fit: the call took the evaluation ahead too
        rows = fit.rows[fit.fits]
        n = len(self.result.rows)
        if len(rows) != n or n == 0:
            return None
        positions = self.position_of_row[rows]
        if int(positions.min()) < 0:
            return None  # a row that did not fit then
        found = np.zeros(n, dtype=bool)
        found[positions] = True
        if not found.all():
            return None  # a row twice, so another missing
        result = self.result
        return ScoreResult(rows, result.scores[positions], result.choice[positions])


UNUSED_BEFORE_BACKING_OFF = 8
"""Speculations in a row that no call took before ``SpeculationPace`` backs off."""
BACKED_OFF_EVERY = 16
"""While backed off: one speculation per this many chances."""


class SpeculationPace:
    """Whether to score ahead now. A speculation no call takes is CPU spent for nothing (on a
    small machine, CPU the next filter waits for): that is the case when each pod asks
    something else than the one before (a queue of mixed shapes), or kube-scheduler sends each
    pod another subset of the nodes (a ``percentageOfNodesToScore`` under 100 that still covers
    half of them: under half, the warm keeps no request, so nothing is scored ahead). After
    ``UNUSED_BEFORE_BACKING_OFF`` unused ones in a row, only every ``BACKED_OFF_EVERY``-th
    chance is taken, until one is used again. Owned by the scorer, under its lock."""

    def __init__(self) -> None:
        self._unused = 0
        self._chances = 0
        self.skipped = 0
        """Chances let pass while backed off (``gpu_extender_scores_ahead_skipped_total``)."""

    def ended(self, taken: bool) -> None:
        """A speculation is replaced; ``taken``: a call took its scores."""
        self._unused = 0 if taken else self._unused + 1

    def now(self) -> bool:
        if self._unused < UNUSED_BEFORE_BACKING_OFF:
            return True
        self._chances += 1
        if self._chances >= BACKED_OFF_EVERY:
            self._chances = 0
            return True
        self.skipped += 1
        return False
