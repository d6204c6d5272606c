"""The per-row kernels that ``RowCache`` refreshes one row at a time give every row the same
bits whether it is computed alone or with the whole snapshot, and equal their definitions.

Why bits and not ``allclose``: a refresh recomputes the one row a hold changed, the rest stay
from the bulk fill. If the two paths added in different orders (BLAS does, by row count), two
nodes in the same state could hold F values an ulp apart, and F after minus F before of an
unchanged node could be 1e-16 instead of 0: ``ceil(dF / 0.04)`` then puts it a bucket lower
in the default strategy's key.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from extender.core.assign import assign
from extender.core.fit import fit
from extender.core.fragmentation.model import FragModel, _gpu_state_rows, gpu_state
from extender.core.fragmentation.scorer import _SIGNATURE, FragScorer, _first_of_kind_rows
from extender.core.request import PlacementRequest
from extender.core.rowops import row_sum_in_order
from extender.core.scoring.capacity import _used_rows
from extender.core.workload import WorkloadMix
from extender.inventory import ClusterSnapshot
from extender.model import PodKey, RequestKind
from extender.units import MILLI
from tests.core.helpers import (
    catalog,
    placement,
    random_cluster,
    random_request,
    random_shapes,
)

SEEDS = range(12)


def snapshot_of(seed: int) -> tuple[ClusterSnapshot, np.random.Generator]:
    rng = np.random.default_rng(seed)
    return random_cluster(rng, 40, fill=4.0).snapshot(), rng


@pytest.mark.parametrize("shape", [(5, 8), (3, 7, 16), (2, 0), (0, 8), (4, 1)])
def test_row_sum_in_order_adds_left_to_right_whatever_the_row_count(shape: tuple[int, ...]
                                                                    ) -> None:
    rng = np.random.default_rng(sum(shape))
    values = rng.random(shape) * rng.integers(0, 1000, shape)
    flat = values.reshape(int(np.prod(shape[:-1])), shape[-1])
    # Python's left-to-right float addition, from the first column
    expected = [sum(row[1:].tolist(), float(row[0])) if len(row) else 0.0 for row in flat]
    assert row_sum_in_order(values).reshape(-1).tolist() == expected
    for i in range(len(flat)):  # one row alone: the same bits
        assert row_sum_in_order(flat[i:i + 1])[0] == expected[i]


@pytest.mark.parametrize("seed", SEEDS)
def test_row_terms_of_one_row_equal_the_bulk_bits_and_the_definition(seed: int) -> None:
    snap, rng = snapshot_of(seed)
    model = FragModel(catalog(), random_shapes(rng))
    rows = np.arange(snap.n_nodes, dtype=np.int64)
    bulk = model.row_terms(snap, rows)
    state = gpu_state(snap, rows)
    table = model.table
    for row in rows:
        one = _gpu_state_rows(snap, np.array([row], dtype=np.int64))  # the plain-Python path
        for name in ("x", "type_col", "in_model"):
            kept, single = getattr(state, name), getattr(one, name)
            assert single.dtype == kept.dtype
            assert single[0].tolist() == kept[row].tolist()
        alone = model.row_terms(snap, np.array([row], dtype=np.int64))
        for kept, single in zip(bulk, alone, strict=True):
            assert kept[row].tobytes() == single[0].tobytes()
        # the definition: sum over GPUs, in slot order, of x * A[t, l, x] at every level
        x = state.x[row].tolist()
        types = state.type_col[row].tolist()
        for level in range(model.n_levels):
            parts = [xi * float(table[ti, level, xi]) for xi, ti in zip(x, types, strict=True)]
            assert bulk[2][row, level] == sum(parts[1:], parts[0])
        for g, group in enumerate(model.groups):
            qualify = [bool(state.in_model[row, j]) and x[j] >= int(group.need[types[j]])
                       for j in range(snap.n_gpus)]
            assert bulk[3][row, g] == sum(qualify)
            assert bulk[4][row, g] == sum(x[j] for j in range(snap.n_gpus) if qualify[j])
    # F now is the uncached kernel's (which sums with BLAS: equal up to rounding)
    level = model.levels(snap.cpu_free[rows])
    assert np.array_equal(bulk[0], level)
    np.testing.assert_allclose(bulk[1], model.node_frag(state, level), rtol=1e-12, atol=1e-9)
    assert (bulk[2] <= MILLI * snap.n_gpus * sum(model.shapes.values()) + 1e-9).all()


@pytest.mark.parametrize("seed", SEEDS)
def test_first_of_kind_is_the_first_gpu_of_each_state_on_its_node(seed: int) -> None:
    snap, _ = snapshot_of(seed)
    rows = np.arange(snap.n_nodes, dtype=np.int64)
    (first,) = _first_of_kind_rows(snap, rows)
    assert first.shape == (snap.n_nodes, snap.n_gpus)
    repeats = 0
    for row in rows:
        states = [tuple(getattr(snap, name)[row, j].item() for name in _SIGNATURE)
                  for j in range(snap.n_gpus)]
        expected = [states[j] not in states[:j] for j in range(snap.n_gpus)]
        repeats += expected.count(False)
        assert first[row].tolist() == expected
        (alone,) = _first_of_kind_rows(snap, np.array([row], dtype=np.int64))
        assert alone[0].tolist() == expected
    assert repeats  # the clusters do have GPUs in the same state as an earlier one


def whole_requests(rng: np.random.Generator, count: int) -> list[PlacementRequest]:
    """Requests that take GPUs whole (shares go through another path)."""
    out: list[PlacementRequest] = []
    while len(out) < count:
        req, namespace, cpu = random_request(rng)
        if req.kind not in (RequestKind.VRAM, RequestKind.FRACTION):
            out.append(placement(req, namespace, cpu))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_f_after_taking_in_python_has_the_vector_paths_bits(seed: int) -> None:
    snap, rng = snapshot_of(seed)
    model = FragModel(catalog(), random_shapes(rng))
    rows = np.arange(snap.n_nodes, dtype=np.int64)
    compared = 0
    for preq in whole_requests(rng, 8):
        result = fit(snap, preq, rows)
        fitting = rows[result.fits]
        level_after = model.levels(snap.cpu_free[fitting] - preq.cpu_milli)
        owners: list[int] = []
        slots: list[int] = []
        for i, row in enumerate(fitting):
            taken = np.flatnonzero(result.units[row] > 0)[:preq.count]
            owners += [i] * len(taken)
            slots += taken.tolist()
        owner = np.array(owners, dtype=np.intp)
        slot = np.array(slots, dtype=np.intp)
        vector = model.frag_after_changes(snap, fitting, level_after, owner=owner, slot=slot,
                                          x_after=np.zeros(len(slot), dtype=np.int64),
                                          sets=len(fitting))
        for i, row in enumerate(fitting.tolist()):
            python = model.frag_after_taking(snap, row, model.level_of(
                int(snap.cpu_free[row]) - preq.cpu_milli), slot[owner == i].tolist())
            assert np.float64(python).tobytes() == vector[i].tobytes()
            compared += 1
    assert compared


@pytest.mark.parametrize("seed", range(4))
def test_f_after_kept_through_one_row_refreshes_equals_f_after_afresh(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(970 + seed)
    inv = random_cluster(rng, 24, fill=2.0)
    scorer = FragScorer(catalog(), WorkloadMix())
    scorer.set_shapes(random_shapes(rng))
    model = scorer.model()
    one_row = 0
    real = model.frag_after_taking

    def counted(*args: Any, **kwargs: Any) -> float:
        nonlocal one_row
        one_row += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "frag_after_taking", counted)
    first = inv.snapshot()
    everything = np.arange(first.n_nodes, dtype=np.int64)
    requests = [preq for preq in whole_requests(rng, 16)
                if fit(first, preq, everything).fits.sum() >= 3][:3]
    for step in range(12):
        snap = inv.snapshot()
        rows = np.arange(snap.n_nodes, dtype=np.int64)
        for preq in requests:
            result = fit(snap, preq, rows)
            got = scorer.frag_after(snap, preq, result)  # the second call on: kept
            want = scorer._whole_after(snap, preq, result)
            for g, w in zip(got, want, strict=True):
                assert g.tobytes() == w.tobytes()
        # one pod of a request placed, as between two pods of a burst: one row changes
        preq = requests[step % len(requests)]
        fitting = np.flatnonzero(fit(snap, preq, rows).fits)
        if len(fitting):
            row = int(fitting[int(rng.integers(len(fitting)))])
            inv.assume(PodKey("default", f"pod-{step}", f"pod-{step}"), assign(snap, preq, row),
                       cpu_milli=preq.cpu_milli, ttl=30.0)
    assert one_row  # the one-row path ran (else this compared the vector path to itself)


@pytest.mark.parametrize("seed", SEEDS)
def test_used_fraction_of_one_row_has_the_bulk_bits(seed: int) -> None:
    snap, _ = snapshot_of(seed)
    rows = np.arange(snap.n_nodes, dtype=np.int64)
    used, total, count = _used_rows(snap, rows)
    kinds = set()
    for row in rows.tolist():
        one = _used_rows(snap, np.array([row], dtype=np.int64))  # the plain-Python path
        assert one[0][0].tobytes() == used[row].tobytes()
        assert one[1][0].tobytes() == total[row].tobytes()
        assert one[2][0] == count[row]
        present = snap.gpu_type[row] >= 0
        assert total[row] == sum(used[row].tolist()[1:], used[row, 0])
        assert count[row] == present.sum()
        kinds |= {"mig" if layout >= 0 else "sliced" if replicas else "plain"
                  for layout, replicas, here in zip(snap.mig_layout[row], snap.replicas[row],
                                                    present, strict=True) if here}
    assert kinds == {"mig", "sliced", "plain"}  # every branch of the fraction was compared
