"""Binning the per-arrival log into one point per 1 % of arrived demand."""

from __future__ import annotations

import numpy as np
import pytest

from extender.simulator.metrics import bin_curve

CAPACITY = 10_000  # thousandths: a 10-GPU cluster, so 100 thousandths = 1 %


def test_points_average_the_arrivals_that_round_to_them() -> None:
    # columns: arrived, used GPUs, frag (thousandths), cost
    log = np.array([
        [40, 0.04, 500, 1.0],    # 0.4 %  -> bin 0
        [60, 0.06, 700, 3.0],    # 0.6 %  -> bin 1
        [140, 0.10, 900, 5.0],   # 1.4 %  -> bin 1
        [450, 0.40, 1000, 7.0],  # 4.5 %  -> bin 4 (half to even)
    ])
    points = bin_curve(log, CAPACITY, last_pct=5)
    by_pct = {p.arrived_pct: p for p in points}
    assert by_pct[0].allocated_pct == pytest.approx(0.4)  # 0.04 GPUs of 10 = 0.4 %
    assert by_pct[0].frag_pct == pytest.approx(5.0)  # 500 thousandths = 0.5 GPU = 5 %
    assert by_pct[1].allocated_pct == pytest.approx((0.06 + 0.10) / 2 * 10)
    assert by_pct[1].cost_per_hour == pytest.approx(4.0)
    # bin 2 has no arrival of its own: its neighbours 1..3 (bins 1) stand in
    assert by_pct[2].allocated_pct == pytest.approx(by_pct[1].allocated_pct)
    # bin 3: neighbours 2..4 -> bin 4's arrival
    assert by_pct[3].allocated_pct == pytest.approx(4.0)
    assert by_pct[4].allocated_pct == pytest.approx(4.0)
    assert by_pct[5].unallocated_pct == pytest.approx(96.0)


def test_an_empty_log_has_no_curve() -> None:
    assert bin_curve(np.zeros((0, 4)), CAPACITY, 130) == []


def test_the_occupied_bill_counts_each_used_node_once_at_its_full_price() -> None:
    from extender.core.fragmentation.model import FragModel
    from extender.core.workload import Shape
    from extender.simulator.metrics import Recorder
    from tests.core.helpers import catalog, inventory, node, place, request

    # a: 2 x T4 (0.53 $/h each) = 1.06; b: 1 x L40S = 1.86; c: no GPUs = 0
    inv = inventory(node("a", "t4", 2), node("b", "l40s", 1), node("c", count=0))
    snap = inv.snapshot()
    recorder = Recorder(FragModel(catalog(), {Shape(1, 1000): 1.0}), snap, 3000)
    price = {name: float(catalog().price[catalog().index_of(t)])
             for name, t in (("a", "t4"), ("b", "l40s"))}
    assert recorder.occupied_cost_per_hour == 0.0
    for name, want in (("a", 2 * price["a"]),             # a opens: both T4s are billed
                       ("a", 2 * price["a"]),             # a again: no new node
                       ("b", 2 * price["a"] + price["b"]),
                       ("c", 2 * price["a"] + price["b"])):  # a CPU-only node prices 0
        if name != "c":  # a CPU-only pod on c: nothing for the inventory to hold
            place(inv, request("fraction", milli=250), name)
        recorder.node_changed(inv.snapshot(), snap.node_index[name])
        recorder.arrival(250, 0.25, 0.25 * price["a"])
        assert recorder.occupied_cost_per_hour == pytest.approx(want)
    assert recorder.log()[:, 4].tolist() == pytest.approx(
        [2 * price["a"], 2 * price["a"], 2 * price["a"] + price["b"],
         2 * price["a"] + price["b"]])
