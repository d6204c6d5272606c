"""Differential tests: every vectorized kernel against the per-node, per-GPU reference
(``tests.reference.naive``) on seeded random clusters.

Each cluster mixes types (protected ones, unknown ones, a few nodes with two types), 0-16 GPUs
per node, MIG (dynamic and static layouts), time slicing, unhealthy GPUs, holes left by removed
nodes, and random prior holdings placed by the core and applied through ``Inventory.assume`` /
``observe``. Requests cover every kind, typed / untyped / excluded, in namespaces with and
without allowances.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from extender.core.assign import NoFitError, assign
from extender.core.fit import FitResult, fit
from extender.core.fragmentation.model import FragModel, gpu_state
from extender.core.request import PlacementRequest
from extender.core.scoring.base import StrategyContext
from extender.core.scoring.cost_fragmentation import CPU_WEIGHT, CostFragmentation
from extender.core.scoring.fgd import FGD
from extender.core.scoring.registry import make_strategy
from extender.core.workload import Shape, WorkloadMix
from extender.inventory import ClusterSnapshot
from extender.model import GpuRequest, RequestKind
from extender.simulator.metrics import Recorder
from tests.core.default_oracle import default_keys, rank_scores
from tests.core.helpers import (
    catalog,
    inventory,
    node,
    placement,
    platform,
    random_cluster,
    random_request,
    random_shapes,
    reference,
)
from tests.reference.naive import NaiveNoFitError, NaiveReference

SEEDS = range(24)
REQUESTS_PER_CLUSTER = 24
MEMORY_PER_GPU = 24576.0
"""MiB per GPU the default strategy's workload asks (so that dS, stranded memory, is live)."""


def strategies(shapes: dict[Shape, float]) -> dict[str, object]:
    """fgd (integer scores, as the simulator), fgd with float scores, and the allocation
    scorers, with FGD's typical shapes fixed to ``shapes``."""
    out: dict[str, object] = {}
    for name in ("fgd", "fgd-float", "least-allocated", "most-allocated", "best-fit"):
        context = StrategyContext(catalog(), platform().config.scoring)
        out[name] = make_strategy(name.removesuffix("-float"), context)
    for name in ("fgd", "fgd-float"):
        scorer = out[name]
        assert isinstance(scorer, FGD)
        scorer.frag.set_shapes(shapes)
        scorer.integer = name == "fgd"
    scoring = platform().config.scoring
    # the default weights, and the same with dP switched the other way (cpuWeight 2 <-> 0)
    other_cpu = 0.0 if CPU_WEIGHT else 1.0
    for name, config in (("cost-fragmentation", scoring),
                         ("cost-fragmentation-cpu", dataclasses.replace(
                             scoring, weights={**scoring.weights, "cpuWeight": other_cpu}))):
        default = make_strategy("cost-fragmentation", StrategyContext(
            catalog(), config, WorkloadMix(memory_per_gpu=MEMORY_PER_GPU),
            np.random.default_rng(7)))
        assert isinstance(default, CostFragmentation)
        default.frag.set_shapes(shapes)
        out[name] = default
    return out


def all_rows(snap: ClusterSnapshot) -> np.ndarray:
    return np.arange(snap.n_nodes, dtype=np.int64)


def check_default(default_scorer: CostFragmentation, snap: ClusterSnapshot, *,
                  req: GpuRequest, preq: PlacementRequest, result: FitResult,
                  ref: NaiveReference, fitting: list[int],
                  units: Mapping[int, Sequence[int]], shapes: dict[Shape, float],
                  cpu: int, memory: int, context: str) -> None:
    """The default strategy (under its weights) against its oracle."""
    default = default_scorer.score(snap, preq, result)
    assert [int(r) for r in default.rows] == fitting
    oracle = default_keys(ref, snap, req, fitting, units, shapes=shapes,
                          weights=default_scorer.context.weights(default_scorer.WEIGHTS),
                          salt=default_scorer.salt, memory_per_gpu=MEMORY_PER_GPU,
                          cpu_milli=cpu, memory_mib=memory)
    terms = default_scorer.terms(snap, preq, result)
    np.testing.assert_allclose(terms.loss, [o.loss for o in oracle], atol=1e-9,
                               err_msg=context)
    assert [int(c) for c in default.choice] == [o.choice for o in oracle], context
    near_edge = any(abs(o.loss / default_scorer.resolution
                        - round(o.loss / default_scorer.resolution)) < 1e-6 and
                    abs(o.loss) > 1e-9 for o in oracle)
    if not near_edge:  # a loss on a bucket edge may round either way on both sides
        assert default.scores.tolist() == rank_scores(oracle), context


def check_request(snap: ClusterSnapshot, req: GpuRequest, *, namespace: str, cpu: int,
                  shapes: dict[Shape, float], scorers: dict[str, object],
                  check_cpu_memory: bool = False, memory: int = 0) -> int:
    """Compare fit, every scorer, F before/after, dF and assign on every row; returns the
    number of fitting rows."""
    ref = reference()
    preq = placement(req, namespace, cpu, memory)
    rows = all_rows(snap)
    result = fit(snap, preq, rows, check_cpu_memory=check_cpu_memory)
    context = f"{req} ns={namespace!r} cpu={cpu}"
    naive = [ref.fit_node(snap, req, int(r), namespace=namespace, cpu_milli=cpu,
                          memory_mib=memory, check_cpu_memory=check_cpu_memory) for r in rows]
    for i, row in enumerate(rows):
        expected = naive[i]
        node_name = snap.node_names[row]
        assert int(result.code[i]) == expected.code, (context, node_name)
        assert tuple(int(v) for v in result.params[i]) == expected.params, (context, node_name)
        assert [int(u) for u in result.units[i]] == expected.units, (context, node_name)
    fitting = [int(r) for i, r in enumerate(rows) if naive[i].fits]
    units = {r: naive[list(rows).index(r)].units for r in fitting}

    # -- scores
    fgd = scorers["fgd"]
    for name, scorer in scorers.items():
        if name.startswith("cost-fragmentation"):
            continue  # against its own oracle below
        out = scorer.score(snap, preq, result)  # type: ignore[attr-defined]
        assert [int(r) for r in out.rows] == fitting, (name, context)
        assert np.all((out.scores >= 0) & (out.scores <= 100)), (name, context)
        if name.startswith("fgd"):
            integer = name == "fgd"
            for j, row in enumerate(fitting):
                want = ref.fgd(snap, req, row, units[row], shapes, cpu_milli=cpu,
                               integer=integer)
                got_choice = int(out.choice[j])
                if want.choice < 0:
                    assert got_choice == -1, (name, context, row)
                else:
                    assert got_choice in want.near_best, (name, context, row, want)
                raw = 100.0 / (1.0 + math.exp(want.delta))
                if integer and abs(raw - round(raw)) < 1e-6:
                    assert abs(float(out.scores[j]) - want.score) <= 1, (name, context, row)
                else:
                    assert float(out.scores[j]) == pytest.approx(want.score, abs=1e-6), \
                        (name, context, row)
        elif name == "best-fit":
            raw = [ref.best_fit_raw(snap, req, row, units[row], cpu) for row in fitting]
            want_scores = ref.min_max(raw)
            np.testing.assert_allclose(out.scores, want_scores, atol=1e-6, err_msg=context)
        else:
            method = ref.least_allocated if name == "least-allocated" else ref.most_allocated
            want_scores = [method(snap, req, row, units[row]) for row in fitting]
            np.testing.assert_allclose(out.scores, want_scores, atol=1e-9, err_msg=context)

    # -- F before / after from FGD's model, and dF of the chosen GPU
    assert isinstance(fgd, FGD)
    _, frag_rows, before, after = fgd.frag.frag_after(snap, preq, result)
    assert [int(r) for r in frag_rows] == fitting
    share = req.kind in (RequestKind.FRACTION, RequestKind.VRAM)
    assert after.ndim == (2 if share else 1)
    for j, row in enumerate(fitting):
        assert float(before[j]) == pytest.approx(ref.node_frag(snap, row, shapes), abs=1e-7)
        if share:
            for slot in range(snap.n_gpus):
                if units[row][slot] > 0:
                    want_after = ref.frag_after(snap, req, row, shapes, cpu_milli=cpu,
                                                slots=[slot])
                    assert float(after[j, slot]) == pytest.approx(want_after, abs=1e-7)
                else:
                    assert after[j, slot] == np.inf
    for name in ("fgd", "fgd-float"):
        scorer = scorers[name]
        assert isinstance(scorer, FGD)
        _, delta, choice = scorer.delta(snap, preq, result)
        for j, row in enumerate(fitting):
            want = ref.fgd(snap, req, row, units[row], shapes, cpu_milli=cpu,
                           integer=scorer.integer)
            if want.choice < 0:
                assert int(choice[j]) == -1
                assert float(delta[j]) == pytest.approx(want.delta, abs=1e-9), (context, row)
            else:
                assert int(choice[j]) in want.near_best, (context, row, name)
    _, _, choice = fgd.delta(snap, preq, result)

    # -- the default strategy against its oracle (tests/core/default_oracle.py)
    for variant in ("cost-fragmentation", "cost-fragmentation-cpu"):
        default_scorer = scorers[variant]
        assert isinstance(default_scorer, CostFragmentation)
        check_default(default_scorer, snap, req=req, preq=preq, result=result, ref=ref,
                      fitting=fitting, units=units, shapes=shapes, cpu=cpu, memory=memory,
                      context=context)

    # -- assign: default rules, and the FGD choice as the preferred order
    for row in fitting:
        got = assign(snap, preq, row)
        want_assignment = ref.assign(snap, req, row, namespace=namespace)
        assert got == want_assignment, (context, snap.node_names[row])
    for j, row in enumerate(fitting):
        if int(choice[j]) >= 0:
            order = [int(choice[j])]
            assert assign(snap, preq, row, order=order) == \
                ref.assign(snap, req, row, namespace=namespace, order=order)
    for i, row in enumerate(rows):
        if not naive[i].fits and not check_cpu_memory:
            with pytest.raises(NoFitError):
                assign(snap, preq, int(row))
            with pytest.raises(NaiveNoFitError):
                ref.assign(snap, req, int(row), namespace=namespace)
    return len(fitting)


@pytest.mark.parametrize("seed", SEEDS)
def test_kernels_match_the_reference_on_a_random_cluster(seed: int) -> None:
    rng = np.random.default_rng(seed)
    inv = random_cluster(rng, int(rng.integers(8, 30)), fill=float(rng.uniform(1, 6)))
    snap = inv.snapshot()
    shapes = random_shapes(rng)
    scorers = strategies(shapes)
    fitting = 0
    for i in range(REQUESTS_PER_CLUSTER):
        req, namespace, cpu = random_request(rng)
        fitting += check_request(snap, req, namespace=namespace, cpu=cpu, shapes=shapes,
                                 scorers=scorers,
                                 check_cpu_memory=i % 6 == 0,
                                 memory=int(rng.integers(0, 300)) * 1024)
    assert fitting > 0  # the cluster is not so full that nothing is compared


@pytest.mark.parametrize("seed", SEEDS)
def test_fragmentation_matches_the_reference_on_every_node(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    inv = random_cluster(rng, 20, fill=4.0)
    snap = inv.snapshot()
    ref = reference()
    for _ in range(3):
        shapes = random_shapes(rng)
        model = FragModel(catalog(), shapes)
        rows = snap.valid_rows()
        got = model.node_frag(gpu_state(snap, rows), model.levels(snap.cpu_free[rows]))
        want = [ref.node_frag(snap, int(r), shapes) for r in rows]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-7)
        recorder = Recorder(model, snap, capacity_milli=1000)
        recorder.arrival(0)
        assert recorder.log()[0, 2] == pytest.approx(sum(want), abs=1e-6)


def test_a_mixed_node_multi_gpu_vram_shape_counts_every_idle_gpu_when_it_cannot_fit() -> None:
    # One T4 (16384 MiB) and one A10 (24576 MiB), both idle; shape: 2 GPUs x 20000 MiB.
    # Demand: ceil(20000*1000/16384) = 1221 > 1000 on the T4 (never usable), ceil(20000*1000
    # /24576) = 814 on the A10 (usable). 1 usable GPU < 2: every idle thousandth is a
    # fragment, F = 1000 + 1000 = 2000.
    from tests.core.helpers import gpu
    info = node("mixed", gpus=[gpu("t4", 0), gpu("a10", 1)])
    snap = inventory(info).snapshot()
    shapes = {Shape(2, 0, 20000, 0, None): 1.0}
    model = FragModel(catalog(), shapes)
    rows = snap.valid_rows()
    got = model.node_frag(gpu_state(snap, rows), model.levels(snap.cpu_free[rows]))
    assert reference().node_frag(snap, 0, shapes) == 2000.0
    assert float(got[0]) == 2000.0


# -- degenerate shapes ------------------------------------------------------------------------


def _scorers() -> dict[str, object]:
    return strategies({Shape(1, 500, 0, 0, None): 0.5, Shape(2, 1000, 0, 0, None): 0.5})


@pytest.mark.parametrize("kind", list(RequestKind))
def test_an_empty_cluster_fits_nothing_and_scores_nothing(kind: RequestKind) -> None:
    snap = inventory().snapshot()
    req, _, _ = random_request(np.random.default_rng(7))
    req = GpuRequest(kind=kind, count=1, vram_mib=1024, milli=500,
                     mig_profile="1g.10gb" if kind is RequestKind.MIG else None)
    preq = placement(req)
    result = fit(snap, preq, np.zeros(0, dtype=np.int64))
    assert result.code.shape == (0,) and result.units.shape[0] == 0
    for scorer in _scorers().values():
        out = scorer.score(snap, preq, result)  # type: ignore[attr-defined]
        assert len(out.rows) == len(out.scores) == len(out.choice) == 0
    default = make_strategy("cost-fragmentation",
                            StrategyContext(catalog(), platform().config.scoring))
    assert len(default.score(snap, preq, result).rows) == 0


@pytest.mark.parametrize("kind", list(RequestKind))
def test_degenerate_nodes_agree_with_the_reference(kind: RequestKind) -> None:
    from tests.core.helpers import gpu, place, request
    nodes = [
        node("no-gpus", count=0),
        node("full", "t4", 2),
        node("removed", "t4", 2),
        node("one", "a100-80gb", 1, mig="dynamic"),
    ]
    inv = inventory(*nodes)
    place(inv, request("whole", 2), "full")
    place(inv, request("mig", 7, mig="1g.10gb", types=["a100-80gb"]), "one")
    inv.remove_node("removed")
    inv.upsert_node(node("sliced", gpus=[gpu("l4", 0, replicas=2)]))
    snap = inv.snapshot()
    req = GpuRequest(kind=kind, count=1, vram_mib=1024, milli=500,
                     mig_profile="1g.10gb" if kind is RequestKind.MIG else None)
    shapes = {Shape(1, 500, 0, 0, None): 1.0}
    check_request(snap, req, namespace="platform", cpu=0, shapes=shapes,
                  scorers=_scorers() | strategies(shapes))


def test_when_every_row_is_a_removed_node_all_are_unknown() -> None:
    inv = inventory(node("a", "t4", 1), node("b", "l4", 2))
    inv.remove_node("a")
    inv.remove_node("b")
    snap = inv.snapshot()
    req = GpuRequest(kind=RequestKind.WHOLE, count=1)
    result = fit(snap, placement(req), all_rows(snap))
    assert [int(c) for c in result.code] == [1, 1]  # Reason.UNKNOWN_NODE
    check_request(snap, req, namespace="", cpu=0, shapes={Shape(1, 1000, 0, 0, None): 1.0},
                  scorers=_scorers())
    assert [snap.node_index.get(name) for name in ("a", "b")] == [None, None]


def test_random_clusters_exercise_every_reason_and_kind() -> None:
    """Guard against a generator that silently stops covering cases: over the seeds, every
    reason code except CPU/memory shows up, and every request kind fits somewhere."""
    seen_codes: set[int] = set()
    fitting_kinds: set[RequestKind] = set()
    for seed in range(12):
        rng = np.random.default_rng(seed)
        inv = random_cluster(rng, 20, fill=float(rng.uniform(1, 6)))
        snap = inv.snapshot()
        for _ in range(40):
            req, namespace, cpu = random_request(rng)
            result = fit(snap, placement(req, namespace, cpu), all_rows(snap))
            seen_codes |= {int(c) for c in result.code}
            if result.fits.any():
                fitting_kinds.add(req.kind)
    from extender.core.reasons import Reason
    # BOUND_ELSEWHERE and NO_HANDOFF are set by the scheduling layer (a retried cycle's
    # holding, a pool's handoff), never by the kernel
    expected = {int(r) for r in Reason} - {Reason.CPU_BUSY, Reason.MEMORY_BUSY,
                                           Reason.BOUND_ELSEWHERE, Reason.NO_HANDOFF}
    assert expected - seen_codes == set()
    assert fitting_kinds == set(RequestKind)


@pytest.mark.parametrize("seed", range(6))
def test_fit_on_any_rows_in_any_order_equals_fit_on_all_rows(seed: int) -> None:
    """``fit`` runs in place on the snapshot when the rows cover most of it and on gathered
    rows otherwise; either way row i of the answer is about ``rows[i]``."""
    rng = np.random.default_rng(500 + seed)
    snap = random_cluster(rng, 24, fill=3.0).snapshot()
    everything = all_rows(snap)
    for _ in range(10):
        req, namespace, cpu = random_request(rng)
        preq = placement(req, namespace, cpu)
        full = fit(snap, preq, everything, check_cpu_memory=True)
        for rows in (rng.permutation(snap.n_nodes), rng.permutation(snap.n_nodes)[:5],
                     np.repeat(everything[:3], 2), everything[::-1]):
            part = fit(snap, preq, rows.astype(np.int64), check_cpu_memory=True)
            assert np.array_equal(part.rows, rows)
            assert np.array_equal(part.code, full.code[rows])
            assert np.array_equal(part.params, full.params[rows])
            assert np.array_equal(part.units, full.units[rows])
