"""Refreshing ahead of the next call (``scheduling.warm``) changes no answer and leaves the
next call nothing to recompute: ``RowCache.refresh``, ``FitCache.refresh`` and the default
strategy's ``refresh``, each against the same object never refreshed (the differential twin),
through the changes a burst and a cluster make."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from extender.core import fit_cache
from extender.core.assign import assign
from extender.core.fit import FitResult, fit
from extender.core.fit_cache import FitCache
from extender.core.request import PlacementRequest
from extender.core.scoring.base import Refresher, StrategyContext
from extender.core.scoring.cost_fragmentation import CostFragmentation
from extender.core.workload import WorkloadMix
from extender.inventory import ClusterSnapshot
from extender.inventory.snapshot import Derived, RowCache
from extender.model import PodKey
from tests.core.helpers import (
    catalog,
    inventory,
    node,
    place,
    placement,
    platform,
    pooled_cluster,
    random_change,
    random_cluster,
    request,
)
from tests.core.test_kept_terms import count_local_rows, whole_requests


def _free_gpus(computed: list[int]) -> Any:
    def compute(snap: ClusterSnapshot, rows: np.ndarray) -> Derived:
        computed.append(len(rows))
        return ((snap.free_mib[rows] > 0).sum(axis=1),)
    return compute


def test_row_cache_refresh_updates_a_kept_key_and_never_fills_a_new_one() -> None:
    inv = inventory(*(node(f"n{i}", "l4", 4) for i in range(6)))
    cache = RowCache()
    computed: list[int] = []
    compute = _free_gpus(computed)
    assert cache.refresh("free", inv.snapshot(), compute) is None
    assert computed == [] and "free" not in cache._entries  # a key no call asked for
    cache.use("free", inv.snapshot(), compute, lambda arrays: None)
    assert computed == [6]
    place(inv, request("whole", 3), "n2")
    changed = cache.refresh("free", inv.snapshot(), compute)
    assert changed is not None and changed.tolist() == [2]
    assert computed == [6, 1]  # n2 alone
    unchanged = cache.refresh("free", inv.snapshot(), compute)
    assert unchanged is not None and unchanged.tolist() == [] and computed == [6, 1]
    # the next call finds every row current: nothing computed, the refreshed values read
    free = cache.derive("free", inv.snapshot(), compute, np.arange(6, dtype=np.int64))
    assert computed == [6, 1]
    assert free[0].tolist() == [4, 4, 1, 4, 4, 4]
    inv.upsert_node(node("n6", "l4", 2))  # a node added: its row alone
    added = cache.refresh("free", inv.snapshot(), compute)
    assert added is not None and added.tolist() == [6] and computed == [6, 1, 1]


class _CountedVersions(np.ndarray):
    """A ``node_version`` that counts the row comparisons made against it."""

    compared = 0

    def __ne__(self, other: object) -> Any:
        _CountedVersions.compared += 1
        return np.asarray(self) != other


def test_row_cache_read_again_on_the_same_snapshot_compares_and_computes_nothing() -> None:
    inv = inventory(*(node(f"n{i}", "l4", 4) for i in range(4)))
    cache = RowCache()
    computed: list[int] = []
    compute = _free_gpus(computed)
    plain = inv.snapshot()
    snap = dataclasses.replace(plain, node_version=plain.node_version.view(_CountedVersions))
    cache.use("free", snap, compute, lambda arrays: None)
    assert computed == [4]
    _CountedVersions.compared = 0
    again = cache.refresh("free", snap, compute)  # the very snapshot: its versions are known
    assert again is not None and again.tolist() == [] and not again.flags.writeable
    assert _CountedVersions.compared == 0 and computed == [4]
    # equal versions in another array object: compared row by row, nothing computed
    twin = dataclasses.replace(snap, node_version=np.array(snap.node_version))
    assert cache.refresh("free", twin, compute) is not None
    assert _CountedVersions.compared >= 1 and computed == [4]
    place(inv, request("whole", 3), "n1")  # a change: that row alone computed
    changed = cache.refresh("free", inv.snapshot(), compute)
    assert changed is not None and changed.tolist() == [1] and computed == [4, 1]
    free = cache.derive("free", snap, compute, np.arange(4, dtype=np.int64))
    assert free[0].tolist() == [4, 4, 4, 4]  # the older snapshot: its own values again
    assert computed == [4, 1, 1]


def test_fit_cache_refresh_is_the_fit_on_every_row_and_leaves_nothing_stale(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fitted: list[int] = []

    def counting_fit(snap: ClusterSnapshot, req: PlacementRequest, rows: np.ndarray,
                     **kw: bool) -> FitResult:
        fitted.append(len(rows))
        return fit(snap, req, rows, **kw)

    monkeypatch.setattr(fit_cache, "fit", counting_fit)
    inv = inventory(*(node(f"n{i}", "l4", 4) for i in range(8)))
    preq = placement(request("whole", 2))
    cache = FitCache()
    assert cache.refresh(inv.snapshot(), preq) is None  # never asked: nothing computed
    assert fitted == []
    rows = np.arange(8, dtype=np.int64)[::-1].copy()
    cache.fit(inv.snapshot(), preq, rows)
    place(inv, request("whole", 3), "n5")  # n5: 1 of 4 GPUs left
    snap = inv.snapshot()
    refreshed = cache.refresh(snap, preq)
    assert refreshed is not None and fitted == [8, 1]
    want = fit(snap, preq, np.array([5], dtype=np.int64))
    assert refreshed.rows.tolist() == [5]  # the row that changed, as it fits now
    assert refreshed.code.tobytes() == want.code.tobytes()
    assert refreshed.params.tobytes() == want.params.tobytes()
    assert refreshed.units.tobytes() == want.units.tobytes()
    cache.fit(snap, preq, rows)  # the next filter: nothing left to fit
    assert fitted == [8, 1]


@pytest.mark.parametrize("pooled", [False, True], ids=["random", "pooled"])
@pytest.mark.parametrize("seed", range(4))
def test_a_refreshed_strategy_scores_what_one_never_refreshed_scores(
        seed: int, pooled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(6100 + seed)
    # pools of equal nodes: changed rows found by content, whose node order is read apart
    inv = pooled_cluster(rng, 3, 8) if pooled else \
        random_cluster(rng, int(rng.integers(14, 30)), fill=float(rng.uniform(1, 3)))

    def strategy() -> CostFragmentation:
        return CostFragmentation(StrategyContext(
            catalog(), platform().config.scoring, WorkloadMix(memory_per_gpu=32768.0),
            np.random.default_rng(seed)))

    warmed, cold = strategy(), strategy()
    assert isinstance(warmed, Refresher)
    computed, _ = count_local_rows(warmed, monkeypatch)  # rows the warmed twin computed
    row_keys_of = warmed._row_keys_of

    def counted_row_keys(snap: ClusterSnapshot, changed: np.ndarray) -> Any:
        computed.append(len(changed))  # the node order, idle bit and bill of changed rows
        return row_keys_of(snap, changed)

    monkeypatch.setattr(warmed, "_row_keys_of", counted_row_keys)
    requests = whole_requests(rng, inv.snapshot(), 2)
    for step in range(12):
        snap = inv.snapshot()
        everything = rng.permutation(snap.valid_rows()).astype(np.int64)
        for preq in requests:
            result = fit(snap, preq, everything)
            computed.clear()
            got = warmed.score(snap, preq, result)
            if step >= 2 and step % 4 != 0:
                # kept since step 1, and refreshed right after the last change (a
                # placement): the score recomputed no row
                assert computed == []
            want = cold.score(snap, preq, result)
            assert got.rows.tobytes() == want.rows.tobytes()
            assert got.scores.tobytes() == want.scores.tobytes()
            assert got.choice.tobytes() == want.choice.tobytes()
        if step % 4 == 3:
            random_change(rng, inv, step)  # several rows, a row added, a hole: not refreshed
            continue
        preq = requests[step % len(requests)]
        fitting = snap.valid_rows()[fit(snap, preq, snap.valid_rows()).fits]
        if len(fitting):  # one pod placed, as between two pods of a burst
            row = int(fitting[int(rng.integers(len(fitting)))])
            inv.assume(PodKey("default", f"pod-{step}", f"pod-{step}"),
                       assign(snap, preq, row), cpu_milli=preq.cpu_milli, ttl=30.0)
        after = inv.snapshot()
        changed = np.flatnonzero(after.node_version != snap.node_version)
        for preq in requests:  # what the warm does once the answer is out
            warmed.refresh(after, preq, fit(after, preq, changed))


def test_refresh_keeps_nothing_for_a_request_asked_once() -> None:
    rng = np.random.default_rng(61)
    snap = random_cluster(rng, 12).snapshot()
    strategy = CostFragmentation(StrategyContext(catalog(), platform().config.scoring))
    (preq,) = whole_requests(rng, snap, 1)
    every = fit(snap, preq, np.arange(snap.n_nodes, dtype=np.int64))
    none = fit(snap, preq, np.zeros(0, dtype=np.int64))
    strategy.refresh(snap, preq, none)
    assert strategy._kept._entries == {}  # never scored: nothing to refresh, nothing filled
    strategy.score(snap, preq, every)
    strategy.refresh(snap, preq, none)
    assert strategy._kept._entries == {}  # scored once: still not kept (a one-off pod)
