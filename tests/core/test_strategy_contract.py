"""One contract, every registered strategy (scikit-learn's ``parametrize_with_checks``).

For each strategy in the registry, on seeded random clusters (every request kind, typed and
untyped, MIG, time slicing, holes; see ``tests/core/helpers.py``):

- the rows scored are exactly the rows that fit, in ``FitResult.rows`` order;
- scores are finite and in [0, MAX_SCORE];
- a choice (GPU slot >= 0) is always a GPU with a unit for the pod;
- two instances built with the same seed give the same answer;
- the answer does not depend on the order of the candidate rows (per row);
- scoring does not write to the snapshot;
- a strategy that explains itself (``Explainer``) gives one set of terms per row, the same
  for a row asked alone, and its key terms rank the rows as its scores do;
- a strategy whose scores may be computed ahead (``Speculative``) scores, on the same
  instance, the same set of fitting rows alike in any order, with or without the rows that do
  not fit, and scoring leaves its ``speculation_key`` as it was.

A new strategy is covered the moment it is registered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

from extender.core.assign import assign
from extender.core.fit import FitResult, fit
from extender.core.scoring.base import (
    MAX_SCORE,
    PLACEMENTS,
    Explainer,
    PlacementObserver,
    ScoreResult,
    Speculative,
    Strategy,
    StrategyContext,
)
from extender.core.scoring.registry import REGISTRY, make_strategy, strategy_names
from extender.core.workload import WorkloadMix
from extender.inventory import ClusterSnapshot
from tests.core.helpers import catalog, placement, platform, random_cluster, random_request

SEEDS = range(4)
REQUESTS = 16
DRAWS_ONE_WINNER = {"random"}
"""Strategies that draw one winner among the rows they are given: their answer depends on
the order of the rows by design, so only its form (one MAX_SCORE, the rest 0) is invariant."""


def build(name: str, seed: int) -> Strategy:
    context = StrategyContext(catalog(), platform().config.scoring,
                              WorkloadMix(memory_per_gpu=32768.0), np.random.default_rng(seed))
    return make_strategy(name, context)


def cases(seed: int) -> Iterator[tuple[ClusterSnapshot, FitResult, object]]:
    """(snapshot, fit on all rows in a shuffled order, placement request) per request."""
    rng = np.random.default_rng(4200 + seed)
    snap = random_cluster(rng, int(rng.integers(6, 20)), fill=float(rng.uniform(1, 5))).snapshot()
    for _ in range(REQUESTS):
        req, namespace, cpu = random_request(rng)
        preq = placement(req, namespace, cpu)
        rows = rng.permutation(snap.n_nodes).astype(np.int64)
        yield snap, fit(snap, preq, rows), preq


def frozen_arrays(snap: ClusterSnapshot) -> dict[str, npt.NDArray[np.generic]]:
    return {f.name: getattr(snap, f.name).copy() for f in dataclasses.fields(snap)
            if isinstance(getattr(snap, f.name), np.ndarray)}


def by_row(out: ScoreResult) -> dict[int, tuple[float, int]]:
    return {int(r): (float(s), int(c)) for r, s, c in zip(out.rows, out.scores, out.choice,
                                                          strict=True)}


def feed(strategy: Strategy, snap: ClusterSnapshot, preq: object, fitted: FitResult,
         out: ScoreResult) -> None:
    """Tell a placement-observing strategy that the pod went to its best node."""
    if PLACEMENTS not in strategy.NEEDS or len(out.rows) == 0:
        return
    assert isinstance(strategy, PlacementObserver)
    row = int(out.rows[int(np.argmax(out.scores))])
    strategy.placed(snap, preq, row, assign(snap, preq, row))  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", strategy_names())
def test_every_strategy_keeps_the_contract(name: str, seed: int) -> None:
    first, twin, shuffled = build(name, seed), build(name, seed), build(name, seed)
    checked = 0
    for snap, fitted, preq in cases(seed):
        before = frozen_arrays(snap)
        out = first.score(snap, preq, fitted)  # type: ignore[arg-type]
        # rows: exactly the fitting rows, in fit order
        assert out.rows.tolist() == fitted.rows[fitted.fits].tolist()
        assert len(out.scores) == len(out.choice) == len(out.rows)
        # scores in range
        assert np.all(np.isfinite(out.scores))
        assert np.all((out.scores >= 0) & (out.scores <= MAX_SCORE))
        # a choice is a GPU with a unit
        positions = np.flatnonzero(fitted.fits)
        for j, slot in enumerate(out.choice.tolist()):
            if slot >= 0:
                assert int(fitted.units[positions[j], slot]) > 0, (name, j, slot)
        # deterministic for a seed
        again = twin.score(snap, preq, fitted)  # type: ignore[arg-type]
        assert by_row(again) == by_row(out)
        # invariant to the order of the candidate rows
        reverse = fitted.rows[::-1].copy()
        other = shuffled.score(snap, preq, fit(snap, preq, reverse))  # type: ignore[arg-type]
        if name in DRAWS_ONE_WINNER:
            assert sorted(other.scores.tolist()) == sorted(out.scores.tolist())
        else:
            assert by_row(other) == by_row(out)
        # the snapshot is read, never written
        for array, value in before.items():
            assert np.array_equal(getattr(snap, array), value), (name, array)
        for strategy in (first, twin, shuffled):
            feed(strategy, snap, preq, fitted, out)
        checked += len(out.rows)
    assert checked > 0


def test_every_strategy_declares_its_name_weights_and_needs() -> None:
    for name, cls in REGISTRY.items():
        assert name == cls.NAME
        for key, weight in cls.WEIGHTS.items():
            assert weight.low <= weight.default <= weight.high, (name, key)
            assert weight.doc, (name, key)
            if weight.flag:
                assert weight.default in (0.0, 1.0), (name, key)
        assert {PLACEMENTS} >= cls.NEEDS, name
        assert (PLACEMENTS in cls.NEEDS) == hasattr(cls, "placed"), name


EXPLAINERS = [name for name in strategy_names() if hasattr(REGISTRY[name], "explain")]


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("name", EXPLAINERS)
def test_key_terms_rank_the_rows_as_the_scores_do(name: str, seed: int) -> None:
    strategy = build(name, seed)
    assert isinstance(strategy, Explainer)
    checked = 0
    for snap, fitted, preq in cases(seed):
        out = strategy.score(snap, preq, fitted)  # type: ignore[arg-type]
        if len(out.rows) == 0:
            continue
        explained = strategy.explain(snap, preq, fitted, out.rows)  # type: ignore[arg-type]
        assert len(explained) == len(out.rows)
        keys = [tuple(t.key for t in terms if t.key is not None) for terms in explained]
        order = sorted(range(len(keys)), key=keys.__getitem__)
        ranked = out.scores[order]
        # a smaller key never scores less (equal keys score equal)
        assert np.all(np.diff(ranked) <= 1e-9), (name, keys, out.scores.tolist())
        best = int(np.argmax(out.scores))
        assert keys[best] == min(keys)
        alone = strategy.explain(snap, preq, fitted, out.rows[[best]])  # type: ignore[arg-type]
        assert alone[0] == explained[best]
        checked += len(keys)
    assert checked > 0


SPECULATIVE = [name for name in strategy_names()
               if hasattr(REGISTRY[name], "speculation_key")]


def test_the_default_strategy_is_speculative() -> None:
    assert "cost-fragmentation" in SPECULATIVE  # else the service never scores ahead


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", SPECULATIVE)
def test_a_speculative_strategy_scores_the_set_of_rows_that_fit(name: str, seed: int) -> None:
    """``scheduling/speculation.py`` permutes a scoring done ahead to the call's order, on
    the instance the call uses: each call here follows another on the same strategy, as the
    call follows its speculation in the service."""
    strategy = build(name, seed)
    assert isinstance(strategy, Speculative)
    rng = np.random.default_rng(77 + seed)
    checked = 0
    for snap, fitted, preq in cases(seed):
        key = strategy.speculation_key()
        out = strategy.score(snap, preq, fitted)  # type: ignore[arg-type]
        assert strategy.speculation_key() == key  # scoring moves none of its inputs
        fitting = fitted.rows[fitted.fits]
        others = fitted.rows[~fitted.fits]
        some_others = others[rng.random(len(others)) < 0.5]
        for rows in (rng.permutation(fitting),
                     rng.permutation(np.concatenate([fitting, some_others])),
                     np.concatenate([others, fitting[::-1]])):
            again = strategy.score(snap, preq, fit(snap, preq, rows))  # type: ignore[arg-type]
            assert by_row(again) == by_row(out), (name, rows.tolist())
        checked += len(out.rows)
    assert checked > 0
