"""The explanation's chosen node and runner-up, against the naive reference."""

from __future__ import annotations

import numpy as np
import pytest

from extender.scheduling.explain import chosen_and_runner_up


def naive(rows: np.ndarray, scores: np.ndarray, row: int) -> tuple[int, int | None] | None:
    positions = np.flatnonzero(rows == row)
    if len(positions) == 0:
        return None
    others = np.flatnonzero(rows != row)
    runner = int(others[np.argmax(scores[others])]) if len(others) else None
    return int(positions[0]), runner


@pytest.mark.parametrize(("rows", "scores", "row", "expected"), [
    # scores 100, 90, 90: the first of the two 90s is the runner-up
    ([4, 7, 2], [100.0, 90.0, 90.0], 4, (0, 1)),
    # the chosen node is not the best-scored one: the best other one still is the runner-up
    ([4, 7, 2], [100.0, 90.0, 80.0], 7, (1, 0)),
    ([4], [100.0], 4, (0, None)),  # the only node
    ([4, 7], [100.0, 90.0], 9, None),  # not scored
    ([4, 7], [0.0, 0.0], 4, (0, 1)),  # a runner-up at 0 is still one
])
def test_table(rows: list[int], scores: list[float], row: int,
               expected: tuple[int, int | None] | None) -> None:
    assert chosen_and_runner_up(np.array(rows), np.array(scores), row) == expected


@pytest.mark.parametrize("seed", range(20))
def test_the_same_as_the_naive_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    rows = rng.permutation(100)[:n].astype(np.int64)
    scores = rng.choice([0.0, 70.0, 80.0, 90.0, 100.0], size=n)  # ties on purpose
    for row in [*rows.tolist(), 1000]:
        assert chosen_and_runner_up(rows, scores, row) == naive(rows, scores, row)
