"""``group_failures`` groups failed nodes with one stable sort of the packed keys: the same
groups, in the same order, with the same names in the same order as ``np.unique``'s grouping
(the first implementation, kept here as the oracle), so the filter answer's bytes are equal."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from extender.server.failures import _packed_keys, _sorted_groups


def unique_groups(keys: npt.NDArray[np.int64]
                  ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], list[int]]:
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    ends = np.cumsum(np.bincount(inverse, minlength=len(first))).tolist()
    return first, order, ends


@pytest.mark.parametrize("seed", range(40))
def test_one_stable_sort_groups_as_unique_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 1500))
    # few distinct rows, as in a real answer: codes 1-12, numbers from a small pool
    codes = rng.integers(1, 13, n).astype(np.int64)
    pool = rng.integers(0, 1 << 17, (int(rng.integers(1, 6)), 3))
    params = pool[rng.integers(0, len(pool), n)]
    keys = _packed_keys(codes, params)
    assert keys is not None
    first, order, ends = _sorted_groups(keys)
    want_first, want_order, want_ends = unique_groups(keys)
    assert first.tolist() == want_first.tolist()
    assert order.tolist() == want_order.tolist()
    assert ends == want_ends


def test_a_single_key_is_one_group() -> None:
    # 3 equal keys: one group, first position 0, positions in order, ending at 3
    first, order, ends = _sorted_groups(np.array([7, 7, 7], dtype=np.int64))
    assert first.tolist() == [0] and order.tolist() == [0, 1, 2] and ends == [3]


def test_groups_come_in_key_order_with_positions_in_request_order() -> None:
    # keys 5,2,5,2,9 -> groups by key 2 (positions 1,3), 5 (0,2), 9 (4)
    first, order, ends = _sorted_groups(np.array([5, 2, 5, 2, 9], dtype=np.int64))
    assert first.tolist() == [1, 0, 4]
    assert order.tolist() == [1, 3, 0, 2, 4]
    assert ends == [2, 4, 5]
