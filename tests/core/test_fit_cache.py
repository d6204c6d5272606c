"""``FitCache`` answers exactly what ``fit`` answers, and refits only the rows that changed;
``FragScorer``'s whole-GPU F after kept per row answers exactly what it computes afresh.

Random clusters (the differential tests' generator) change between calls the ways the
inventory changes: pods placed and removed, nodes added, replaced and removed; after every
change each kept request's cached fit equals a fresh ``fit`` on every row, on a permutation and
on a subset."""

from __future__ import annotations

import numpy as np
import pytest

from extender.core import fit_cache
from extender.core.fit import FitResult, fit
from extender.core.fit_cache import FitCache
from extender.core.fragmentation import scorer as scorer_module
from extender.core.fragmentation.scorer import FragScorer
from extender.core.request import PlacementRequest
from extender.core.workload import Shape, WorkloadMix
from extender.inventory import ClusterSnapshot
from extender.model import RequestKind
from tests.core.helpers import (
    catalog,
    inventory,
    node,
    place,
    placement,
    pooled_cluster,
    random_change,
    random_cluster,
    random_holdings,
    random_node,
    random_request,
    random_shapes,
    request,
)


def _same(got: FitResult, want: FitResult) -> None:
    assert np.array_equal(got.rows, want.rows)
    assert np.array_equal(got.code, want.code)
    assert np.array_equal(got.params, want.params)
    assert np.array_equal(got.units, want.units)


def _check(cache: FitCache, snap: ClusterSnapshot, preq: PlacementRequest,
           rng: np.random.Generator) -> None:
    everything = np.arange(snap.n_nodes, dtype=np.int64)
    for rows in (everything, rng.permutation(snap.n_nodes).astype(np.int64),
                 everything[: max(1, snap.n_nodes * 3 // 4)], everything[:2]):
        _same(cache.fit(snap, preq, rows), fit(snap, preq, rows, check_cpu_memory=True))


@pytest.mark.parametrize("seed", range(4))
def test_the_cached_fit_equals_fit_after_every_change(seed: int) -> None:
    rng = np.random.default_rng(900 + seed)
    inv = random_cluster(rng, 20, fill=2.0)
    requests = [placement(req, namespace, cpu)
                for req, namespace, cpu in (random_request(rng) for _ in range(6))]
    cache = FitCache(check_cpu_memory=True, requests=4)  # fewer than the requests: evictions
    for step in range(12):
        snap = inv.snapshot()
        for preq in requests:
            _check(cache, snap, preq, rng)
        random_change(rng, inv, step)


@pytest.mark.parametrize("seed", range(4))
def test_the_cached_fit_equals_fit_in_pools_of_equal_nodes(seed: int) -> None:
    # nodes that differ only by name: a changed row is often in a state another node of its
    # pool was fitted in before, and is looked up by content instead of fitted
    rng = np.random.default_rng(980 + seed)
    inv = pooled_cluster(rng, 3, 6)
    requests = [placement(req, namespace, cpu)
                for req, namespace, cpu in (random_request(rng) for _ in range(6))]
    cache = FitCache(check_cpu_memory=True, requests=8)
    for step in range(16):
        snap = inv.snapshot()
        for preq in requests:
            _check(cache, snap, preq, rng)
        if step % 4 == 3:
            random_change(rng, inv, step)
        else:
            random_holdings(rng, inv, 2)
    assert cache._cache.content_hits > 0


@pytest.mark.parametrize("seed", range(3))
def test_f_after_kept_per_row_equals_f_after_computed_afresh(seed: int) -> None:
    rng = np.random.default_rng(950 + seed)
    inv = random_cluster(rng, 24, fill=2.0)
    scorer = FragScorer(catalog(), WorkloadMix())
    scorer.set_shapes(random_shapes(rng))
    requests = []
    while len(requests) < 5:
        req, namespace, cpu = random_request(rng)
        if req.kind not in (RequestKind.VRAM, RequestKind.FRACTION):  # shares: another path
            requests.append(placement(req, namespace, cpu))
    for step in range(8):
        snap = inv.snapshot()
        everything = np.arange(snap.n_nodes, dtype=np.int64)
        for preq in requests:
            for rows in (everything, rng.permutation(snap.n_nodes).astype(np.int64)):
                result = fit(snap, preq, rows, check_cpu_memory=bool(step % 2))
                got = scorer.frag_after(snap, preq, result)  # the second call on: kept
                want = scorer._whole_after(snap, preq, result)
                for g, w in zip(got, want, strict=True):
                    assert np.array_equal(g, w)
        if step % 2:
            random_holdings(rng, inv, 6)
        else:
            names = inv.node_names()
            inv.upsert_node(random_node(rng, names[int(rng.integers(len(names)))]))
            inv.upsert_node(random_node(rng, f"new-{step}"))
    assert scorer._after._entries  # the kept path ran (else this compared a path to itself)


def test_only_the_rows_that_changed_are_fitted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    inv = inventory(*(node(f"n{i}", "l4", 4) for i in range(10)))
    preq = placement(request("whole", 2))
    fitted: list[int] = []

    def counting_fit(snap: ClusterSnapshot, req: PlacementRequest, rows: np.ndarray,
                     **kw: bool) -> FitResult:
        fitted.append(len(rows))
        return fit(snap, req, rows, **kw)

    monkeypatch.setattr(fit_cache, "fit", counting_fit)
    cache = FitCache()
    rows = np.arange(10, dtype=np.int64)
    first = cache.fit(inv.snapshot(), preq, rows)
    assert fitted == [10] and first.fits.all()
    place(inv, request("whole", 3), "n4")  # n4: 1 of 4 GPUs left
    after = cache.fit(inv.snapshot(), preq, rows)
    assert fitted == [10, 1]  # n4 alone
    assert after.fits.tolist() == [True] * 4 + [False] + [True] * 5
    cache.fit(inv.snapshot(), preq, rows)
    assert fitted == [10, 1]  # nothing changed: nothing fitted
    # another request object (even an equal one) is another entry
    cache.fit(inv.snapshot(), placement(request("whole", 2)), rows)
    assert fitted == [10, 1, 10]
    # few candidates: plain fit on those rows, the cache is not touched
    cache.fit(inv.snapshot(), preq, rows[:3])
    assert fitted == [10, 1, 10, 3]


def test_another_inventory_with_the_same_versions_is_not_confused() -> None:
    """Rows' versions count within one inventory: two inventories built the same way have
    equal versions and different GPUs."""
    small = inventory(*(node(f"n{i}", "l4", 1) for i in range(4)))
    large = inventory(*(node(f"n{i}", "l4", 4) for i in range(4)))
    preq = placement(request("whole", 2))
    rows = np.arange(4, dtype=np.int64)
    cache = FitCache()
    assert not cache.fit(small.snapshot(), preq, rows).fits.any()
    assert cache.fit(large.snapshot(), preq, rows).fits.all()


def test_f_after_refreshes_a_changed_row_from_the_callers_fit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    inv = inventory(*(node(f"n{i}", "l4", 4) for i in range(10)))
    scorer = FragScorer(catalog(), WorkloadMix())
    scorer.set_shapes({Shape(1, 1000, 0, 0, None): 0.5, Shape(2, 1000, 0, 0, None): 0.5})
    preq = placement(request("whole", 1))
    rows = np.arange(10, dtype=np.int64)
    kernel_rows: list[int] = []
    real_fit = scorer_module.kernel.fit

    def counting_fit(snap: ClusterSnapshot, req: PlacementRequest, rows: np.ndarray,
                     **kw: bool) -> FitResult:
        kernel_rows.append(len(rows))
        return real_fit(snap, req, rows, **kw)

    monkeypatch.setattr(scorer_module.kernel, "fit", counting_fit)
    for _ in range(2):  # the second call fills the kept values (the kernel on every row)
        snap = inv.snapshot()
        scorer.frag_after(snap, preq, real_fit(snap, preq, rows))
    assert kernel_rows == [10]
    place(inv, request("whole", 2), "n3")  # one row changes
    snap = inv.snapshot()
    result = real_fit(snap, preq, rows)
    got = scorer.frag_after(snap, preq, result)
    assert kernel_rows == [10]  # n3's fit was read from the caller's
    for g, w in zip(got, scorer._whole_after(snap, preq, result), strict=True):
        assert np.array_equal(g, w)
