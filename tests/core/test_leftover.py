"""``leftover_table``: W(g), what a slice of g thousandths keeps after the fullest exact fill
by the mix's share sizes, worked by hand."""

from __future__ import annotations

import pytest

from extender.core.fragmentation.leftover import leftover_table

SIZES = (470, 320, 220)


@pytest.mark.parametrize(("free", "expected"), [
    (0, 0.0),  # nothing left, nothing kept
    (200, 0.2),  # below the smallest share: all of it stays
    (220, 0.0),  # one 220 exactly
    (530, 0.06),  # 470 (320 + 220 = 540 is too much; 220 + 220 = 440 keeps 0.09)
    (540, 0.0),  # 320 + 220
    (1000, 0.02),  # 220 + 220 + 220 + 320 = 980; no sum of 470, 320, 220 makes 990-1000
])
def test_leftover_of_a_slice(free: int, expected: float) -> None:
    assert leftover_table(SIZES)[free] == pytest.approx(expected)


def test_no_shares_keep_every_slice_whole() -> None:
    # without shares nothing fills a slice: W(g) = g / 1000
    table = leftover_table(())
    assert table[0] == 0.0
    assert table[370] == pytest.approx(0.37)
    assert table[1000] == pytest.approx(1.0)


def test_sizes_outside_a_gpu_fill_nothing() -> None:
    # 0 and 1200 thousandths are not shares of one GPU; 500 alone fills 500 and 1000
    table = leftover_table((0, 500, 1200))
    assert [table[g] for g in (499, 500, 999, 1000)] == pytest.approx([0.499, 0.0, 0.499, 0.0])


def test_the_table_is_read_only() -> None:
    # the strategy shares one table per mix between calls
    with pytest.raises(ValueError, match="read-only"):
        leftover_table(SIZES)[5] = 1.0
