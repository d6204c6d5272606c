"""The row reductions the kernels use instead of numpy's slow short-axis reductions: equal to
numpy's on every width (the uint64-word path for multiples of 8, the plain path otherwise)."""

from __future__ import annotations

import numpy as np
import pytest

from extender.core.gpu_units import type_mask
from extender.core.rowops import flat_nonzero, row_any, row_count, row_max, row_min, row_sum


@pytest.mark.parametrize("width", [1, 2, 3, 7, 8, 9, 12, 16, 24])
def test_row_reductions_equal_numpy(width: int) -> None:
    rng = np.random.default_rng(width)
    mask = rng.random((50, width)) < 0.3
    mask[0] = False
    mask[1] = True
    small = rng.integers(0, 8, (50, width)).astype(np.uint8)
    values = rng.integers(-5, 100, (50, width)).astype(np.int16)
    floats = rng.random((50, width))
    assert np.array_equal(row_any(mask), mask.any(axis=1))
    assert np.array_equal(row_count(mask), mask.sum(axis=1))
    assert np.array_equal(row_count(small), small.sum(axis=1))
    assert np.array_equal(row_min(values), values.min(axis=1))
    assert np.array_equal(row_max(values), values.max(axis=1))
    np.testing.assert_allclose(row_sum(floats), floats.sum(axis=1))
    # non-contiguous input (a column slice) takes the plain path
    assert np.array_equal(row_any(mask[:, ::-1]), mask.any(axis=1))


def test_row_reductions_of_no_rows() -> None:
    empty = np.zeros((0, 8), dtype=bool)
    assert row_any(empty).shape == (0,)
    assert row_count(empty).shape == (0,)
    assert row_sum(np.zeros((0, 8))).shape == (0,)


@pytest.mark.parametrize("accepted", [[0], [0, 3, 5], [1, 2, 3, 4, 5, 6], list(range(16))])
def test_type_mask_is_a_lookup_that_is_false_on_padding(accepted: list[int]) -> None:
    lookup = np.zeros(18, dtype=bool)  # 17 types + unknown
    lookup[accepted] = True
    gpu_type = np.random.default_rng(1).integers(-1, 18, (40, 8)).astype(np.int16)
    want = np.where(gpu_type >= 0, lookup[gpu_type], False)
    assert np.array_equal(type_mask(lookup, gpu_type), want)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (1000,), (4, 6), (3, 0), (2, 3, 5)])
def test_flat_nonzero_equals_numpy_on_every_shape(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(shape) * 31 + sum(shape))
    for mask in (rng.random(shape) < 0.3, rng.integers(-2, 3, shape)):
        expected = np.flatnonzero(mask)
        got = flat_nonzero(np.asarray(mask))
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist()
