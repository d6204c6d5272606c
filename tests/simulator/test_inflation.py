"""The arrival sequence: shuffle, then inflate (or deflate) to ``ratio`` x capacity."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from extender.simulator.inflate import arrival_order

NAMES = ("p0", "p1", "p2", "p3")
DEMAND = np.array([1000, 500, 0, 2000], dtype=np.int64)  # 3500 thousandths in all


def order(seed: int, ratio: float, names: tuple[str, ...] = NAMES,
          demand: np.ndarray = DEMAND, capacity: int = 4000) -> np.ndarray:
    return arrival_order(names, demand, capacity, ratio, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", range(20))
def test_inflation_appends_resampled_pods_up_to_the_target(seed: int) -> None:
    out = order(seed, 1.3)  # target 1.3 * 4000 = 5200, the trace has 3500
    assert sorted(out[:4].tolist()) == [0, 1, 2, 3]  # the whole trace first, shuffled
    total = int(DEMAND[out].sum())
    assert total <= 5200  # never past the target ...
    assert total > 5200 - int(DEMAND.max())  # ... and stopped by a pod that did not fit
    assert set(out[4:].tolist()) <= {0, 1, 2, 3}


def test_resampling_is_with_replacement_and_uniform() -> None:
    names = tuple(f"p{i}" for i in range(10))
    demand = np.full(10, 100, dtype=np.int64)
    out = arrival_order(names, demand, 1000, 100.0, np.random.default_rng(1))
    counts = Counter(out[10:].tolist())  # 100 x 1000 / 100 - 10 = 990 resampled
    assert len(out) == 1000
    assert set(counts) == set(range(10)) and min(counts.values()) > 60


def test_deflation_drops_random_pods_until_under_the_target() -> None:
    out = order(5, 0.5)  # target 2000 of 3500
    assert len(set(out.tolist())) == len(out)
    assert int(DEMAND[out].sum()) <= 2000


def test_ratio_zero_keeps_the_trace() -> None:
    assert sorted(order(3, 0.0).tolist()) == [0, 1, 2, 3]


def test_a_cpu_only_trace_is_not_inflated_forever() -> None:
    zero = np.zeros(4, dtype=np.int64)
    assert len(order(0, 1.3, demand=zero)) == 4


def test_the_order_depends_on_the_seed_and_on_names_not_file_order() -> None:
    assert order(7, 1.3).tolist() == order(7, 1.3).tolist()
    assert any(order(7, 1.3).tolist() != order(s, 1.3).tolist() for s in range(8, 12))
    # the trace is sorted by name before the shuffle (SortClusterPods): file order is moot
    reversed_names = NAMES[::-1]
    reversed_demand = DEMAND[::-1].copy()
    a = [NAMES[i] for i in order(7, 1.3)]
    b = [reversed_names[i] for i in order(7, 1.3, reversed_names, reversed_demand)]
    assert a == b
