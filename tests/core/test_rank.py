"""The default strategy's top-k ranking equals a full dense rank on seeded random keys."""

from __future__ import annotations

import numpy as np
import pytest

from extender.core.scoring.rank import dense_rank, rank_scores, top_rank_scores


@pytest.mark.parametrize("seed", range(5))
def test_top_rank_scores_match_the_full_dense_rank(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(400):
        n = int(rng.integers(1, 300))
        keys = [rng.integers(-20, int(rng.integers(1, 50)), n).astype(np.int64)
                for _ in range(int(rng.integers(1, 4)))]
        if rng.random() < 0.3:  # a unique tie-breaker, as the strategy's node priority
            keys.append(rng.permutation(n).astype(np.int64) * 7919 % (1 << 32))
        assert np.array_equal(top_rank_scores(*keys), rank_scores(dense_rank(*keys)))


def test_keys_too_wide_to_pack_fall_back_to_the_full_rank() -> None:
    # three 32-bit keys need 96 bits: no packing, same answer
    keys = [np.array([2**32 - 1, 0, 5], dtype=np.int64)] * 3
    assert list(top_rank_scores(*keys)) == [80.0, 100.0, 90.0]
