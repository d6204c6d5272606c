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


def strategy(cpu_weight: float) -> CostFragmentation:
    scoring = platform().config.scoring
    config = dataclasses.replace(scoring, weights={**scoring.weights, "cpuWeight": cpu_weight})
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
