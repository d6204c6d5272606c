"""dP, the default strategy's GPUs stranded by CPU (``weights.cpuWeight``), worked by hand.

P_n = max(0, free GPUs of n - free CPU of n / c), c = the CPU the typical GPU shapes ask per
GPU. The shapes: one whole GPU with 8 CPU, so c = 8,000 milli per GPU (a CPU-only shape would
not count). Nodes: ``tight``, two T4s beside 12 CPU (P = max(0, 2 - 12 / 8) = 0.5 before any
pod); ``roomy``, two T4s beside 64 CPU (P = 0 until 48 CPU are taken).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from extender.core.fit import fit
from extender.core.scoring.base import StrategyContext
from extender.core.scoring.cost_fragmentation import CostFragmentation
from extender.core.scoring.registry import make_strategy
from extender.core.workload import Shape
from tests.core.helpers import catalog, inventory, node, placement, platform, request

SHAPES = {Shape(gpus=1, milli=1000, cpu_milli=8000): 0.7, Shape(gpus=0, cpu_milli=4000): 0.3}


def strategy(cpu_weight: float, **weights: float) -> CostFragmentation:
    scoring = platform().config.scoring
    config = dataclasses.replace(scoring, weights={**scoring.weights, "cpuWeight": cpu_weight,
                                                   **weights})
    out = make_strategy("cost-fragmentation", StrategyContext(catalog(), config))
    assert isinstance(out, CostFragmentation)
    out.frag.set_shapes(SHAPES)
    return out


@pytest.mark.parametrize(("gpus", "cpu", "expected"), [
    # 1 GPU, 8 CPU on tight: P after = max(0, 1 - 4 / 8) = 0.5, before 0.5 -> dP 0
    (1, 8000, {"tight": 0.0, "roomy": 0.0}),
    # 1 GPU, 10 CPU on tight: P after = max(0, 1 - 2 / 8) = 0.75 -> dP 0.25; roomy: 54 CPU
    # left beside 1 GPU -> 0
    (1, 10_000, {"tight": 0.25, "roomy": 0.0}),
    # a CPU-only pod of 8 CPU: P after = max(0, 2 - 4 / 8) = 1.5 -> dP 1.0 on tight; roomy
    # keeps 56 CPU beside 2 GPUs -> 0
    (0, 8000, {"tight": 1.0, "roomy": 0.0}),
])
def test_dp_counts_the_gpus_a_placement_leaves_without_cpu(
        gpus: int, cpu: int, expected: dict[str, float]) -> None:
    inv = inventory(node("tight", "t4", 2, cpu=12_000), node("roomy", "t4", 2))
    snap = inv.snapshot()
    preq = placement(request("whole", gpus), "platform", cpu)
    result = fit(snap, preq, snap.valid_rows(), check_cpu_memory=True)
    on, off = strategy(1.0), strategy(0.0)
    terms, plain = on.terms(snap, preq, result), off.terms(snap, preq, result)
    names = [snap.node_names[int(r)] for r in terms.rows]
    assert dict(zip(names, terms.cpu_stranded.round(9).tolist(), strict=True)) == expected
    # the loss is the default's loss plus dP; with cpuWeight 0 nothing is added
    np.testing.assert_allclose(terms.loss, plain.loss + terms.cpu_stranded)
    assert not plain.cpu_stranded.any()
    rows = terms.rows
    shown = [{t.name: t.value for t in node_terms}
             for node_terms in on.explain(snap, preq, result, rows)]
    assert [s["stranded CPU"] for s in shown] == pytest.approx(list(expected.values()))
    assert all("stranded CPU" not in {t.name for t in n}
               for n in off.explain(snap, preq, result, rows))


@pytest.mark.parametrize(("roomy_cpu", "expected"), [
    # CPU to spare: the mix asks (0.7 x 8 + 0.3 x 4) / 0.7 = 9.71 CPU per GPU; 4 free GPUs
    # beside 12 + 64 = 76 CPU give 19 per GPU, and 9.71 <= 0.9 x 19 = 17.1: the weights hold
    (64_000, (2.0, 1.5)),
    # CPU scarce: beside 12 + 16 = 28 CPU, 7 per GPU, and 9.71 > 0.9 x 7 = 6.3: both capped
    # at scarceWeight 1
    (16_000, (1.0, 1.0)),
])
def test_scarce_cpu_caps_the_stranded_weights(roomy_cpu: int,
                                              expected: tuple[float, float]) -> None:
    inv = inventory(node("tight", "t4", 2, cpu=12_000), node("roomy", "t4", 2, cpu=roomy_cpu))
    snap = inv.snapshot()
    preq = placement(request("whole", 1), "platform", 10_000)
    result = fit(snap, preq, snap.valid_rows(), check_cpu_memory=True)
    capped = strategy(1.5, memoryWeight=2.0, scarceWeight=1.0)
    assert capped._stranded_weights(snap) == expected
    # 1 GPU with 10 CPU on tight: P after = max(0, 1 - 2 / 8) = 0.75, before 0.5 -> dP 0.25,
    # weighed 1.5 with CPU to spare, 1 without
    terms = capped.terms(snap, preq, result)
    tight = [snap.node_names[int(r)] for r in terms.rows].index("tight")
    assert terms.cpu_stranded[tight] == pytest.approx(0.25 * expected[1])
    # a cap at or above the weights changes nothing
    uncapped = strategy(1.5, memoryWeight=2.0, scarceWeight=2.0)
    assert uncapped._stranded_weights(snap) == (2.0, 1.5)
