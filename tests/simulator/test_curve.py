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
