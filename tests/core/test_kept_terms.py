"""The default strategy's terms kept per row for a repeated whole-GPU request
(``CostFragmentation._kept_local``) have, after any sequence of cluster changes, the bits of
the same terms computed afresh over every fitting row (``_local``).

Why bits: the keys bucket the loss (``ceil(loss / 0.04)``) and break ties on the node order,
so a kept value an ulp off a fresh one could move a node to another bucket, and the extender
(which keeps) would choose differently from the simulator and the what-if (which may not).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from extender.core.assign import assign
from extender.core.fit import FitResult, fit
from extender.core.request import PlacementRequest
from extender.core.scoring.base import StrategyContext
from extender.core.scoring.cost_fragmentation import (
    KEPT_FIELDS,
    CostFragmentation,
    Terms,
)
from extender.core.workload import Shape, WorkloadMix
from extender.inventory import ClusterSnapshot
from extender.model import PodKey, RequestKind
from tests.core.helpers import (
    catalog,
    placement,
    platform,
    pooled_cluster,
    random_change,
    random_cluster,
    random_request,
)

SEEDS = range(6)
STEPS = 16


def whole_requests(rng: np.random.Generator, snap: ClusterSnapshot, count: int
                   ) -> list[PlacementRequest]:
    """Whole-GPU requests (shares are never kept) that fit somewhere."""
    rows = np.arange(snap.n_nodes, dtype=np.int64)
    out: list[PlacementRequest] = []
    while len(out) < count:
        req, namespace, cpu = random_request(rng)
        preq = placement(req, namespace, cpu)
        if req.kind not in (RequestKind.VRAM, RequestKind.FRACTION) and \
                fit(snap, preq, rows).fits.sum() >= 2:
            out.append(preq)
    return out


def count_local_rows(strategy: CostFragmentation, monkeypatch: pytest.MonkeyPatch
                     ) -> tuple[list[int], Any]:
    """Record the rows of each ``_local`` call of ``strategy``: (the list it fills, the
    uncounted ``_local``)."""
    computed: list[int] = []
    local = strategy._local

    def counted(snap: ClusterSnapshot, req: PlacementRequest, result: FitResult) -> Any:
        computed.append(len(result.rows))
        return local(snap, req, result)

    monkeypatch.setattr(strategy, "_local", counted)
    return computed, local


def assert_same_bits(got: Terms, want: Terms) -> None:
    for field in dataclasses.fields(Terms):
        g, w = getattr(got, field.name), getattr(want, field.name)
        assert g.dtype == w.dtype, field.name
        assert g.tobytes() == w.tobytes(), field.name


@pytest.mark.parametrize("pooled", [False, True], ids=["random", "pooled"])
@pytest.mark.parametrize("seed", SEEDS)
def test_kept_terms_equal_fresh_terms_through_placements_and_changes(
        seed: int, pooled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5100 + seed)
    # pooled: nodes that differ only by name, whose changed rows are found by content
    inv = pooled_cluster(rng, 3, 6) if pooled else \
        random_cluster(rng, int(rng.integers(14, 30)), fill=float(rng.uniform(1, 3)))
    context = StrategyContext(catalog(), platform().config.scoring,
                              WorkloadMix(memory_per_gpu=32768.0), np.random.default_rng(seed))
    strategy = CostFragmentation(context)
    refreshed, local = count_local_rows(strategy, monkeypatch)  # rows each refresh computed
    requests = whole_requests(rng, inv.snapshot(), 3)
    for step in range(STEPS):
        snap = inv.snapshot()
        everything = rng.permutation(snap.valid_rows()).astype(np.int64)
        for preq in requests:
            # what kube-scheduler sends: every node, or most of them (some filtered out), in
            # any order; with the CPU check (it only removes rows) on every other call
            sent = everything if step % 3 else everything[: max(2, len(everything) * 3 // 4)]
            result = fit(snap, preq, sent, check_cpu_memory=bool(step % 2))
            got = strategy.terms(snap, preq, result)
            want = strategy._assemble(snap, preq, local(snap, preq, result))
            assert_same_bits(got, want)
        # a placed pod teaches the mix its memory: dS's memory per GPU moves on every step,
        # which must not cost the kept values (only the model's version would)
        context.workload.observe(Shape(gpus=1), memory_mib=int(rng.integers(1, 200_000)))
        if step % 4 == 3:
            random_change(rng, inv, step)  # several rows, a row added, a hole
        else:  # one pod placed, as between two pods of a burst: one row changes
            preq = requests[step % len(requests)]
            fitting = snap.valid_rows()[fit(snap, preq, snap.valid_rows()).fits]
            if len(fitting):
                row = int(fitting[int(rng.integers(len(fitting)))])
                inv.assume(PodKey("default", f"pod-{step}", f"pod-{step}"),
                           assign(snap, preq, row), cpu_milli=preq.cpu_milli, ttl=30.0)
    # the kept path refreshed single rows (else this compared the fresh path to itself)
    assert 1 in refreshed or (pooled and strategy._kept.content_hits > 0)
    if pooled:  # rows were found by content, and the node order is still each row's own
        assert strategy._kept.content_hits > 0


def test_a_one_off_request_is_not_kept() -> None:
    rng = np.random.default_rng(77)
    snap = random_cluster(rng, 12).snapshot()
    strategy = CostFragmentation(StrategyContext(catalog(), platform().config.scoring))
    (preq,) = whole_requests(rng, snap, 1)
    rows = snap.valid_rows()
    strategy.terms(snap, preq, fit(snap, preq, rows))
    assert strategy._kept._entries == {}  # the first call: computed, not kept
    strategy.terms(snap, preq, fit(snap, preq, rows))
    assert len(strategy._kept._entries) == 1  # asked again: kept from now on


@pytest.mark.parametrize("seed", SEEDS)
def test_one_row_alone_has_the_bits_it_has_among_all_rows(seed: int) -> None:
    # a placement's refresh: every kernel under ``_local`` takes its one-row path
    rng = np.random.default_rng(5200 + seed)
    snap = random_cluster(rng, 30, fill=float(rng.uniform(1, 4))).snapshot()
    strategy = CostFragmentation(StrategyContext(
        catalog(), platform().config.scoring, WorkloadMix(memory_per_gpu=32768.0),
        np.random.default_rng(seed)))
    rows = snap.valid_rows()
    kinds = set()
    for preq in whole_requests(rng, snap, 24):
        result = fit(snap, preq, rows)
        everything = strategy._local(snap, preq, result)
        for i, row in enumerate(everything.rows.tolist()):
            one = strategy._local(snap, preq, fit(snap, preq, np.array([row])))
            for name in KEPT_FIELDS:
                want = getattr(everything, name)[i:i + 1]
                assert getattr(one, name).tobytes() == want.tobytes(), (name, preq.kind)
            kinds.add(preq.kind)
    assert {RequestKind.WHOLE, RequestKind.MIG} <= kinds


@pytest.mark.parametrize("seed", SEEDS)
def test_row_keys_of_one_row_equal_the_bulk(seed: int) -> None:
    rng = np.random.default_rng(5300 + seed)
    snap = random_cluster(rng, 30, fill=float(rng.uniform(0.5, 4))).snapshot()
    strategy = CostFragmentation(StrategyContext(catalog(), platform().config.scoring,
                                                 rng=np.random.default_rng(seed)))
    rows = snap.valid_rows()
    bulk = strategy._row_keys_of(snap, rows)
    idle = set()
    for i, row in enumerate(rows.tolist()):
        one = strategy._row_keys_of(snap, np.array([row], dtype=np.int64))
        for kept, single in zip(bulk, one, strict=True):
            assert single.dtype == kept.dtype
            assert single.tolist() == [kept[i]]
        idle.add(int(one[1][0]))
    assert idle == {0, 1}  # busy and idle nodes both compared
