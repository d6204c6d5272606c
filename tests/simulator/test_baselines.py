"""The FGD paper's baselines on hand-worked 2-3 node examples (formulas in
``extender/core/scoring/baselines.py``). GPUs have 1000 MiB, so x = free MiB = free thousandths.

Cluster used below (CPU is what is free; no pod holds CPU):

    a: 2 GPUs,  64 vCPU, x = [1000, 1000]            L = 2000
    b: 2 GPUs,  96 vCPU, x = [ 500, 1000]            L = 1500  (a 0.5 share on GPU 0)
    c: 4 GPUs, 128 vCPU, x = [   0,  300, 1000, 1000] L = 2300  (a whole GPU, a 0.7 share)
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from extender.core.fit import fit
from extender.core.scoring.base import StrategyContext
from extender.core.scoring.baselines import GpuClustering, trunc_div
from extender.inventory import Inventory
from tests.simulator.helpers import (
    catalog,
    inventory,
    node,
    place,
    platform,
    preq,
    score,
    share,
    whole,
)


def cluster() -> Inventory:
    inv = inventory(node("a", 2, cpu=64_000), node("b", 2, cpu=96_000),
                    node("c", 4, cpu=128_000))
    place(inv, "b", share(500), slot=0)
    place(inv, "c", whole(1), slot=0)
    place(inv, "c", share(700), slot=1)
    return inv


def test_dot_product_prefers_the_node_with_less_free_along_the_pod() -> None:
    # pod: 64 vCPU, 0.5 GPU -> p = [64000/128000, 500/8000] = [0.5, 0.0625]
    # a: n = [0.5,  0.25  ] -> dot = 0.25  + 0.015625 = 0.265625 -> floor(100*(1-0.1328)) = 86
    # b: n = [0.75, 0.1875] -> dot = 0.375 + 0.011719 = 0.386719 -> floor(100*(1-0.1934)) = 80
    # c: n = [1.0,  0.2875] -> dot = 0.5   + 0.017969 = 0.517969 -> floor(100*(1-0.2590)) = 74
    out = score("dot-product", cluster(), share(500), cpu=64_000)
    assert out.scores.tolist() == [86.0, 80.0, 74.0]
    assert out.choice.tolist() == [-1, -1, -1]  # the GPU: least free that fits (assign)


def test_gpu_packing_tiers() -> None:
    # 0.5 GPU: a all free -> max(33 - 2, 2) = 31
    #          b takes GPU 0 (x=500, a used GPU) -> 100 - floor(floor(500*100/1000)/10) = 95
    #          c takes GPU 2 (x=0 and 300 do not fit; 1000 does) -> max(50 - 1, 33) = 49
    assert score("gpu-packing", cluster(), share(500)).scores.tolist() == [31.0, 95.0, 49.0]
    # 2 whole GPUs: b has one free GPU (does not fit); c uses two free GPUs -> 50 - 2 = 48
    out = score("gpu-packing", cluster(), whole(2))
    assert out.rows.tolist() == [0, 2]
    assert out.scores.tolist() == [31.0, 48.0]
    # CPU-only pods score 0 everywhere
    assert score("gpu-packing", cluster(), whole(0)).scores.tolist() == [0.0, 0.0, 0.0]


def test_gpu_packing_floors() -> None:
    # an 8-GPU idle node: max(33 - 8, 8) = 25; a 40-GPU... no, max(33 - G, G) floors at G
    inv = inventory(node("big", 8), node("used", 8))
    place(inv, "used", share(100), slot=3)
    # 'used' needs 7 fully free GPUs for a 7-GPU pod -> max(50 - 7, 33) = 43
    out = score("gpu-packing", inv, whole(7))
    assert out.scores.tolist() == [25.0, 43.0]


def test_gpu_clustering_bands() -> None:
    inv = cluster()
    strategy = GpuClustering(StrategyContext(catalog(), platform().config.scoring))
    snap = inv.snapshot()
    # b hosts a share pod; c a 1-GPU pod and a share pod
    strategy.placed(snap, preq(share(500)), 1, None)  # type: ignore[arg-type]
    strategy.placed(snap, preq(whole(1)), 2, None)  # type: ignore[arg-type]
    strategy.placed(snap, preq(share(700)), 2, None)  # type: ignore[arg-type]
    # base = trunc(25 * (8000 - L) / 8000): a 18 (18.75), b 20 (20.31), c 17 (17.81)
    share_pod = preq(share(500))
    out = strategy.score(snap, share_pod, fit(snap, share_pod, snap.valid_rows()))
    # a: no GPU pods yet +25; b: only shares +75; c: shares and others +50
    assert out.scores.tolist() == [43.0, 95.0, 67.0]
    one_gpu = preq(whole(1))
    out = strategy.score(snap, one_gpu, fit(snap, one_gpu, snap.valid_rows()))
    # a: +25; b: only other classes +0; c: 1-gpu and others +50
    assert out.scores.tolist() == [43.0, 20.0, 67.0]
    cpu_only = preq(whole(0))
    assert strategy.score(snap, cpu_only, fit(snap, cpu_only, snap.valid_rows())
                          ).scores.tolist() == [0.0, 0.0, 0.0]


def test_trunc_div_truncates_toward_zero_like_go() -> None:
    assert trunc_div(np.array([150000, -50000]), 8000).tolist() == [18, -6]


def test_random_picks_one_fitting_node_uniformly_and_a_fitting_gpu() -> None:
    inv = cluster()
    chosen: Counter[int] = Counter()
    for seed in range(300):
        out = score("random", inv, share(500), seed=seed)
        assert sorted(out.scores.tolist()) == [0.0, 0.0, 100.0]
        best = int(np.argmax(out.scores))
        chosen[best] += 1
        slot = int(out.choice[best])
        # fitting GPUs: a {0, 1}, b {0, 1}, c {2, 3}
        assert slot in ({0, 1}, {0, 1}, {2, 3})[best]
        assert (out.choice[np.arange(3) != best] == -1).all()
    assert min(chosen.values()) > 70  # ~100 each


@pytest.mark.parametrize("name", ["random", "dot-product", "gpu-packing", "gpu-clustering"])
def test_nothing_fits_gives_empty_scores(name: str) -> None:
    out = score(name, inventory(node("a", 1)), whole(2))
    assert len(out.rows) == 0 and len(out.scores) == 0
