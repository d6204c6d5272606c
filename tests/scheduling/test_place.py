"""``place``: the one placement step of the service and the simulator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from extender.core.assign import assign
from extender.core.fit import fit
from extender.model import GpuRequest, RequestKind
from extender.scheduling.place import place
from tests.core.helpers import placement, platform, random_cluster, random_request


@pytest.mark.parametrize("seed", range(6))
def test_the_fit_in_hand_assigns_what_a_second_fit_would(seed: int) -> None:
    """``assign`` from the row's ``units`` equals ``assign`` that fits the row again, on
    every row that fits, for every strategy's GPU choice (random clusters and requests)."""
    rng = np.random.default_rng(seed)
    inv = random_cluster(rng, 24)
    snapshot = inv.snapshot()
    strategy = platform().strategy()
    checked = 0
    for _ in range(40):
        req, namespace, cpu = random_request(rng)
        preq = placement(req, namespace, cpu)
        result = fit(snapshot, preq, snapshot.valid_rows())
        for position in np.flatnonzero(result.fits).tolist():
            row = int(result.rows[position])
            assert assign(snapshot, preq, row, units=result.units[position]) == \
                assign(snapshot, preq, row)
            checked += 1
        if result.fits.any():
            scores = strategy.score(snapshot, preq, result)
            chosen = place(snapshot, preq, result, scores)
            assert chosen is not None
            best = int(np.argmax(scores.scores))
            assert chosen.row == int(scores.rows[best])
            choice = int(scores.choice[best])
            assert chosen.assignment == assign(snapshot, preq, chosen.row,
                                               order=[choice] if choice >= 0 else None)
    assert checked > 20  # the cases are not all misses


def test_nothing_fits_nothing_placed() -> None:
    rng = np.random.default_rng(0)
    snapshot = random_cluster(rng, 4).snapshot()
    req, namespace, cpu = random_request(rng)
    preq = placement(req, namespace, cpu)
    empty = fit(snapshot, preq, np.zeros(0, dtype=np.int64))
    scores = platform().strategy().score(snapshot, preq, empty)
    assert place(snapshot, preq, empty, scores) is None


class _Broken:
    """A strategy that raises on some pods: its failure must cost only those calls."""

    NAME = "broken"

    def __init__(self, inner: Any, fail_on: int) -> None:
        self.inner, self.fail_on, self.calls = inner, fail_on, 0

    def score(self, snapshot: Any, req: Any, fit: Any) -> Any:
        self.calls += 1
        if req.request.count == self.fail_on:
            raise OverflowError("int too large to convert to C long")
        return self.inner.score(snapshot, req, fit)


def test_a_strategy_failure_falls_back_for_that_call_and_scoring_goes_on() -> None:
    from extender.scheduling.prioritize import FALLBACK_SCORE, Scorer

    failures: list[int] = []
    strategy = _Broken(platform().strategy(), fail_on=2)
    scorer = Scorer(strategy, on_failure=lambda: failures.append(1))  # type: ignore[arg-type]
    snapshot = random_cluster(np.random.default_rng(3), 24).snapshot()
    two = placement(GpuRequest(kind=RequestKind.WHOLE, count=2), "ml", 0)
    one = placement(GpuRequest(kind=RequestKind.WHOLE, count=1), "ml", 0)
    bad = scorer.score(snapshot, two, fit(snapshot, two, snapshot.valid_rows()), pod="ml/two")
    # every fitting node gets the same documented score, GPUs by assign's default rules
    assert set(bad.scores.tolist()) == {FALLBACK_SCORE} and (bad.choice == -1).all()
    assert failures == [1]
    good = scorer.score(snapshot, one, fit(snapshot, one, snapshot.valid_rows()), pod="ml/one")
    assert len(set(good.scores.tolist())) > 1, "the next pod is scored by the strategy again"
    assert failures == [1] and strategy.calls == 2
