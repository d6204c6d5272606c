"""The default strategy's per-snapshot values (``SnapshotMemo``) and per-row keys (the
snapshot's ``RowCache``) equal a fresh computation, and so do its scores, on a cluster that
changes the ways the inventory changes: pods placed and removed, nodes added, replaced and
removed. One long-lived strategy (its memos and the inventory's row cache warm across every
change) against a fresh strategy with the same salt on a copy of each snapshot with an empty
row cache (everything computed from scratch)."""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping

import numpy as np
import pytest

from extender.core.fit import fit
from extender.core.rowops import row_any
from extender.core.scoring.base import StrategyContext
from extender.core.scoring.capacity import used_total
from extender.core.scoring.cost_fragmentation import CostFragmentation, node_price
from extender.core.scoring.registry import make_strategy
from extender.core.scoring.snapshot_memo import SnapshotMemo
from extender.core.workload import Shape, WorkloadMix
from extender.inventory import ClusterSnapshot
from extender.inventory.snapshot import RowCache
from tests.core.helpers import (
    catalog,
    inventory,
    node,
    placement,
    platform,
    random_change,
    random_cluster,
    random_request,
    random_shapes,
)

WEIGHTS = [{}, {"costWeight": 1.0}, {"idlePriceCpu": 100.0}, {"idlePriceCpu": 0.01}]
"""The default, the price ratio on, the CPU gate always open, always shut."""


def build(seed: int, weights: dict[str, float], shapes: Mapping[Shape, float]) -> CostFragmentation:
    config = dataclasses.replace(platform().config.scoring, weights=weights)
    strategy = make_strategy("cost-fragmentation", StrategyContext(
        catalog(), config, WorkloadMix(memory_per_gpu=32768.0), np.random.default_rng(seed)))
    assert isinstance(strategy, CostFragmentation)
    strategy.frag.set_shapes(shapes)
    return strategy


def fresh_cpu_to_spare(strategy: CostFragmentation, snap: ClusterSnapshot) -> bool:
    """The gate as the module computed it on every call before the memo."""
    strategy._cpu_to_spare(snap)  # fills the mix side (``_cpu_per_gpu``: per model, not snapshot)
    if strategy._cpu_per_gpu <= 0:
        return True
    rows = snap.valid_rows()
    used, count = used_total(snap, rows)
    free_gpus = float((count - used).sum())
    free_cpu = float(snap.cpu_free[rows][count > 0].sum())
    return free_gpus <= 0 or strategy._cpu_per_gpu * free_gpus <= strategy.cpu_room * free_cpu


def check(kept: CostFragmentation, fresh: CostFragmentation, snap: ClusterSnapshot,
          rng: np.random.Generator) -> None:
    cold = dataclasses.replace(snap, cache=RowCache())  # the same arrays, nothing cached
    every = np.arange(snap.n_nodes, dtype=np.int64)
    # per row: node order, idle, bill (the snapshot's row cache) = computed from the arrays
    order, idle, bill = kept._row_keys(snap, every)
    assert order.tolist() == [zlib.crc32(n.encode(), kept.salt) for n in snap.node_names]
    assert np.array_equal(idle, (~row_any(snap.pods > 0)).astype(np.int64))
    assert np.array_equal(bill, np.round(node_price(snap, every) * 1000).astype(np.int64))
    # per snapshot: the CPU gate, the claims, the mean price (twice: the second is kept)
    for _ in range(2):
        assert kept._cpu_to_spare(snap) == fresh_cpu_to_spare(fresh, cold)
        assert np.array_equal(kept._claims(snap), fresh._claims(cold))
        choice = np.full(snap.n_nodes, -1, dtype=np.int16)
        assert np.array_equal(kept._price_ratio(snap, every, choice),
                              fresh._price_ratio(cold, every, choice))
    # and the decisions: every score equal, twice on this snapshot (then from the memo)
    for _ in range(4):
        preq = placement(*random_request(rng))
        rows = rng.permutation(snap.n_nodes).astype(np.int64)
        want = fresh.score(cold, preq, fit(cold, preq, rows))
        for _ in range(2):
            got = kept.score(snap, preq, fit(snap, preq, rows))
            assert np.array_equal(got.rows, want.rows)
            assert np.array_equal(got.scores, want.scores)
            assert np.array_equal(got.choice, want.choice)


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("seed", range(3))
def test_kept_values_equal_a_fresh_computation_after_every_change(
        seed: int, weights: dict[str, float]) -> None:
    rng = np.random.default_rng(1700 + seed)
    inv = random_cluster(rng, 18, fill=2.0)
    shapes = random_shapes(rng)
    kept = build(seed, weights, shapes)
    for step in range(10):
        snap = inv.snapshot()
        check(kept, build(seed, weights, shapes), snap, rng)
        random_change(rng, inv, step)
    assert kept.per_snapshot.hits > 0  # the kept path ran


def test_one_record_per_snapshot_and_model_the_last_few_only() -> None:
    inv = inventory(*(node(f"n{i}", "l4", 4) for i in range(3)))
    memo: SnapshotMemo[list[int]] = SnapshotMemo(list, snapshots=2)
    model, other = object(), object()
    first = inv.snapshot()
    record = memo.record(first, model)
    record.append(1)
    assert memo.record(first, model) is record and memo.hits == 1
    assert memo.record(first, other) is not record  # another model: another record
    second = inventory(*(node(f"n{i}", "l4", 4) for i in range(3))).snapshot()
    assert memo.record(second, model) == []  # an equal snapshot is another snapshot
    assert memo.record(first, model) == []  # pushed out (2 kept): computed again
