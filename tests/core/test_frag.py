"""FGD fragmentation worked by hand (``core.fragmentation``), and checked against the reference.

Units are thousandths of a GPU ("milli"), as in the FGD simulator. The worked node has two
T4s (16384 MiB): GPU 0 holds a 0.5 share (8192 MiB), so x = (500, 1000).
"""

from __future__ import annotations

import numpy as np
import pytest

from extender.core.fit import fit
from extender.core.fragmentation.model import FragModel, gpu_state
from extender.core.fragmentation.scorer import share_after_at
from extender.core.scoring.base import StrategyContext
from extender.core.scoring.fgd import FGD
from extender.core.scoring.registry import make_strategy
from extender.core.workload import Shape
from extender.inventory import ClusterSnapshot
from extender.model import NodeInfo
from extender.simulator.metrics import Recorder
from tests.core.helpers import (
    catalog,
    gpu,
    inventory,
    node,
    place,
    placement,
    platform,
    reference,
    request,
    t,
)

A = Shape(gpus=1, milli=600)
"""0.6 of a GPU: fits GPU 1 only (500 < 600 <= 1000)."""
B = Shape(gpus=1, milli=300)
"""0.3 of a GPU: fits both."""
TWO_SHAPES = {A: 0.5, B: 0.5}


def worked_node() -> ClusterSnapshot:
    inv = inventory(node("n", "t4", 2))
    place(inv, request("fraction", milli=500), "n")  # lands on GPU 0: 16384 - 8192 = 8192
    return inv.snapshot()


def frag(snap: ClusterSnapshot, shapes: dict[Shape, float]) -> list[float]:
    model = FragModel(catalog(), shapes)
    rows = snap.valid_rows()
    return [float(v) for v in model.node_frag(gpu_state(snap, rows),
                                              model.levels(snap.cpu_free[rows]))]


def one_node(info: NodeInfo) -> ClusterSnapshot:
    return inventory(info).snapshot()


def test_the_worked_node_has_free_thousandths_500_and_1000() -> None:
    snap = worked_node()
    state = gpu_state(snap, snap.valid_rows())
    assert state.x[0, :2].tolist() == [500, 1000]  # 8192*1000//16384 = 500


FRAG_CASES = [
    pytest.param(TWO_SHAPES, 250.0,
                 # A fits (GPU 1: 1000 >= 600); its fragment is GPU 0's 500 -> 0.5*500 = 250
                 # B fits both GPUs (500, 1000 >= 300): no fragment -> 0.5*0 = 0
                 id="F = 0.5*500 (A cannot use GPU 0) + 0.5*0 (B uses both) = 250"),
    pytest.param({Shape(0, 0, 0, 0): 1.0}, 1500.0,
                 id="a CPU-only shape makes every idle thousandth a fragment: 500+1000"),
    pytest.param({Shape(1, 300, 0, 100_000): 1.0}, 1500.0,
                 # the node has 64000m CPU < 100000m: the shape cannot land at all
                 id="a shape the node lacks CPU for: all idle, 1500"),
    pytest.param({Shape(1, 300, 0, 0, frozenset({0})): 1.0}, 0.0,
                 id="a shape typed t4 on T4s: it uses both GPUs, no fragment"),
    pytest.param({Shape(1, 300, 0, 0, frozenset({1})): 1.0}, 1500.0,
                 id="a shape typed l4 on T4s: type mismatch, all idle 1500"),
    pytest.param({Shape(2, 1000): 1.0}, 1500.0,
                 # 2 whole GPUs: only GPU 1 has 1000; 1 < 2 so all 500 + 1000 are stranded
                 id="2 whole GPUs: only 1 GPU is whole, 1 < 2, so all 1500 are fragments"),
    pytest.param({Shape(1, 0, 8192): 1.0}, 0.0,
                 # 8192 MiB on a 16384 MiB T4 = ceil(8192000/16384) = 500 <= both
                 id="an 8192 MiB VRAM shape needs 500 thousandths of a T4: both qualify"),
    pytest.param({Shape(1, 0, 8193): 1.0}, 500.0,
                 # ceil(8193000/16384) = 501 > 500: GPU 0 is a fragment for it
                 id="8193 MiB needs ceil(8193000/16384) = 501 > 500: GPU 0 is a fragment"),
]


@pytest.mark.parametrize(("shapes", "expected"), FRAG_CASES)
def test_node_fragmentation(shapes: dict[Shape, float], expected: float) -> None:
    snap = worked_node()
    assert frag(snap, shapes) == [pytest.approx(expected)]
    assert reference().node_frag(snap, 0, shapes) == pytest.approx(expected)


def test_gpus_outside_the_model_hold_no_fragments() -> None:
    # unhealthy T4, time-sliced L4, MIG A100: none takes part in FGD's model
    snap = one_node(node("n", gpus=[gpu("t4", 0, healthy=False), gpu("l4", 1, replicas=4),
                                    gpu("a100-80gb", 2, mig="dynamic")]))
    assert frag(snap, {Shape(0, 0, 0, 0): 1.0}) == [0.0]


def test_an_idle_two_gpu_node_is_not_fragmented_for_a_two_gpu_shape() -> None:
    assert frag(one_node(node("n", "t4", 2)), {Shape(2, 1000): 1.0}) == [0.0]


def test_the_replay_logs_cluster_fragmentation_as_the_sum_over_nodes() -> None:
    inv = inventory(node("n", "t4", 2), node("m", "t4", 2))
    place(inv, request("fraction", milli=500), "n")
    # n: 250 (the worked node); m idle: A and B fit everywhere -> 0. Sum 250 thousandths,
    # which is 0.25 GPU = 6.25 % of the 4 GPUs
    recorder = Recorder(FragModel(catalog(), TWO_SHAPES), inv.snapshot(), capacity_milli=4000)
    recorder.arrival(4000)
    assert recorder.log()[0, 2] == pytest.approx(250.0)
    assert recorder.curve(100)[-1].frag_pct == pytest.approx(6.25)


def fgd(shapes: dict[Shape, float], integer: bool = True) -> FGD:
    context = StrategyContext(catalog(), platform().config.scoring)
    strategy = make_strategy("fgd", context)
    assert isinstance(strategy, FGD)
    strategy.frag.set_shapes(shapes)
    strategy.integer = integer
    return strategy


def test_fgd_delta_worked_by_hand_on_a_two_gpu_node_with_two_shapes() -> None:
    # A 0.3 pod holds 16384*300//1000 = 4915 MiB.
    # On GPU 0: 8192 - 4915 = 3277 MiB -> 3277000//16384 = 200; x = (200, 1000):
    #   A: fits GPU 1, fragment 200 -> 100;  B: 200 < 300, fragment 200 -> 100;  F = 200
    # On GPU 1: 16384 - 4915 = 11469 -> 700; x = (500, 700):
    #   A: fits GPU 1, fragment 500 -> 250;  B: fits both -> 0;  F = 250
    # F_before = 250: dF = -50 on GPU 0 and 0 on GPU 1. FGD takes GPU 0 (a best fit too) and
    # scores floor(100 * sigmoid(50/1000)) = floor(51.25) = 51.
    snap = worked_node()
    req = request("fraction", milli=300)
    preq = placement(req)
    rows = snap.valid_rows()
    slots = np.array([0, 1], dtype=np.intp)
    assert share_after_at(snap, preq, rows[[0, 0]], slots).tolist() == [200, 700]
    result = fit(snap, preq, rows)
    strategy = fgd(TWO_SHAPES)
    _, _, before, after = strategy.frag.frag_after(snap, preq, result)
    assert float(before[0]) == pytest.approx(250.0)
    assert after[0, :2].tolist() == pytest.approx([200.0, 250.0])
    scored = strategy.score(snap, preq, result)
    assert int(scored.choice[0]) == 0
    assert float(scored.scores[0]) == 51.0
    _, delta, _ = strategy.delta(snap, preq, result)
    assert float(delta[0]) == pytest.approx(-0.05)
    floats = fgd(TWO_SHAPES, integer=False).score(snap, preq, result)
    assert float(floats.scores[0]) == pytest.approx(100 / (1 + np.exp(-0.05)))
    want = reference().fgd(snap, req, 0, [int(u) for u in result.units[0]], TWO_SHAPES)
    assert (want.choice, want.score, want.delta) == (0, 51, pytest.approx(-0.05))


def test_fgd_scores_whole_gpus_by_the_lowest_free_ones() -> None:
    # Idle 2 x T4, shape 2 whole GPUs. Before: it fits -> F = 0. Taking GPU 0 leaves 1 whole
    # GPU < 2: the other 1000 are a fragment -> dF = +1 GPU -> floor(100*sigmoid(-1)) = 26.
    snap = one_node(node("n", "t4", 2))
    preq = placement(request("whole", 1))
    result = fit(snap, preq, snap.valid_rows())
    scored = fgd({Shape(2, 1000): 1.0}).score(snap, preq, result)
    assert (int(scored.choice[0]), float(scored.scores[0])) == (-1, 26.0)


def test_fgd_ignores_cpu_only_offsets_that_do_not_depend_on_placement() -> None:
    # a CPU-only shape adds p * idle before and after; with p = 1 and a 0.25 pod on an idle
    # T4 the idle capacity drops by 250 -> dF = -0.25 whatever GPU it takes
    snap = one_node(node("n", "t4", 1))
    preq = placement(request("fraction", milli=250))
    result = fit(snap, preq, snap.valid_rows())
    _, delta, _ = fgd({Shape(0, 0, 0, 0): 1.0}).delta(snap, preq, result)
    assert float(delta[0]) == pytest.approx(-0.25)


def test_demand_of_a_vram_shape_depends_on_the_gpu_size() -> None:
    # 20000 MiB: ceil(20000000/16384) = 1221 > 1000 on a T4 (never usable), ceil(20000000/
    # 49152) = 407 on an L40S
    ref = reference()
    shape = Shape(1, 0, 20000)
    assert ref.demand(shape, t("t4")) == 1221
    assert ref.demand(shape, t("l40s")) == 407
