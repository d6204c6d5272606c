"""bench_idle_tax and bench_expire run as their READMEs say, on small sizes."""

from __future__ import annotations

from benchmarks.bench_expire import GPUS, fleet
from benchmarks.bench_idle_tax import extender, synthetic
from extender.inventory.store import HoldingState


def test_the_idle_tax_parts_measure_cpu_with_and_without_a_wait() -> None:
    assert synthetic(0.0, "sleep", 3) > 0
    assert synthetic(0.001, "spin", 3) > 0
    # the pod cycle: every pod answered one node (the exact cut) and bound, else it raises
    assert extender(0.0, 3, 1, 20) > 0
    assert extender(0.001, 3, 1, 20) > 0


def test_the_expire_fleet_holds_every_gpu_and_the_assumed_ones_with_a_ttl() -> None:
    inventory = fleet(4, 3)  # 4 nodes x 8 GPUs; the last node holds the 3 assumed pods
    holdings = inventory.holdings()
    assumed = [h for h in holdings if h.state is HoldingState.ASSUMED]
    assert (len(holdings), len(assumed)) == (3 * GPUS + 3, 3)
    assert all(h.expires_at is not None for h in assumed)
    assert inventory.expire() == []  # a 60 s TTL: none due yet
