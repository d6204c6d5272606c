"""Small generated replays through the service's placement path: every policy, determinism,
the JSON schema and the fragmentation curve."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from extender.core.scoring.capacity import used_fraction
from extender.core.scoring.registry import strategy_names
from extender.core.workload import typical_shapes
from extender.inventory import ClusterSnapshot
from extender.simulator.replay import Replay, ReplayOptions, ReplayResult, pick_best
from extender.simulator.result import SCHEMA_VERSION, summary, to_json
from extender.simulator.scenario import Scenario, openb_scenario
from extender.simulator.synthetic import synthetic_trace
from tests.reference.naive import NaiveReference


@functools.cache
def scenario(typed: float = 0.0) -> Scenario:
    return openb_scenario(synthetic_trace(3, nodes=20, typed=typed))


def replay(policy: str, seed: int = 42, *, inflate: float = 1.2, typed: float = 0.0,
           tie_break: str = "order") -> tuple[Replay, ReplayResult]:
    run = Replay(scenario(typed), ReplayOptions(policy=policy, seed=seed, inflate=inflate,
                                                tie_break=tie_break))
    return run, run.run()


@pytest.mark.parametrize("policy", strategy_names())
def test_every_policy_replays_a_generated_trace(policy: str) -> None:
    run, result = replay(policy, typed=0.2)
    assert result.policy == policy
    assert result.placed + result.failed == result.pods == len(run.order)
    assert result.placed > 0.5 * result.pods
    assert result.curve[-1].allocated_pct > 60.0
    curve = result.curve
    assert [p.arrived_pct for p in curve] == list(range(len(curve)))
    allocated = [p.allocated_pct for p in curve]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(allocated))
    assert all(p.allocated_pct <= min(100.0, p.arrived_pct + 1.0) for p in curve)
    # the recorder agrees with the inventory on what is held
    snap = run.inventory.snapshot()
    held = used_fraction(snap, snap.valid_rows()).sum()
    assert result.used_gpus == pytest.approx(held, abs=0.01 * result.gpus / 100 + 0.05)


def test_a_seed_gives_the_same_result_and_another_seed_another() -> None:
    first = to_json(replay("cost-fragmentation", 7)[1])
    again = to_json(replay("cost-fragmentation", 7)[1])
    other = to_json(replay("cost-fragmentation", 8)[1])
    for out in (first, again, other):
        out.pop("wall_seconds")
    assert first == again
    assert first["curve"] != other["curve"]


def test_random_tie_breaking_is_seeded_too() -> None:
    a = to_json(replay("fgd", 5, tie_break="random")[1])
    b = to_json(replay("fgd", 5, tie_break="random")[1])
    a.pop("wall_seconds")
    b.pop("wall_seconds")
    assert a == b
    with pytest.raises(ValueError, match="tie_break"):
        Replay(scenario(), ReplayOptions(tie_break="coin"))


def test_pick_best_takes_the_first_or_a_random_maximum() -> None:
    scores = np.array([3.0, 7.0, 1.0, 7.0])
    assert pick_best(scores, None) == 1
    picks = {pick_best(scores, np.random.default_rng(s)) for s in range(20)}
    assert picks == {1, 3}


def test_fgd_fragmentation_curve_is_sane() -> None:
    run, result = replay("fgd", inflate=1.3)
    shapes = typical_shapes(scenario().typical)
    platform = scenario().platform
    reference = NaiveReference(platform.catalog, platform.config.protection)

    def frag_pct(snapshot: ClusterSnapshot) -> float:
        """The oracle's sum of F over all nodes, in % of the cluster's GPUs."""
        total = sum(reference.node_frag(snapshot, int(row), shapes)
                    for row in snapshot.valid_rows())
        return total / 1000 * 100 / result.gpus

    empty = Replay(scenario(), ReplayOptions(policy="fgd")).inventory.snapshot()
    initial = frag_pct(empty)
    curve = result.curve
    assert curve[0].frag_pct == pytest.approx(initial, abs=1.0)
    for point in curve:
        idle = 100.0 - point.allocated_pct
        assert 0.0 <= point.frag_pct <= idle + 1e-6  # fragments are idle GPUs
    # the last point is measured on the final state
    final = frag_pct(run.inventory.snapshot())
    assert curve[-1].frag_pct == pytest.approx(final, abs=1.5)


def test_json_schema() -> None:
    out = to_json(replay("best-fit")[1])
    assert out["schema"] == SCHEMA_VERSION
    assert set(out) == {"schema", "policy", "seed", "trace", "inflate", "cluster", "pods",
                        "unallocated_pct_at_100", "unallocated_pct", "allocated_gpus",
                        "cost_per_hour", "occupied_cost_per_hour", "placed_by_label",
                        "untyped_on_protected", "curve", "wall_seconds"}
    assert isinstance(out["unallocated_pct_at_100"], float)
    assert out["unallocated_pct"]["100"] == out["unallocated_pct_at_100"]
    assert set(out["cluster"]) == {"nodes", "gpus"}
    assert set(out["pods"]) == {"arrived", "placed", "failed", "failed_gpu_milli",
                                "failures_by_request"}
    point = out["curve"][100]
    assert set(point) == {"arrived_pct", "allocated_pct", "unallocated_pct", "frag_pct",
                          "cost_per_hour", "occupied_cost_per_hour"}
    assert set(out["occupied_cost_per_hour"]) == {"25", "50", "75", "100"}
    # the occupied nodes' bill grows with arrivals and covers at least the GPUs allocated
    bills = [out["occupied_cost_per_hour"][k] for k in ("25", "50", "75", "100")]
    assert bills == sorted(bills) and bills[0] > 0
    assert point["occupied_cost_per_hour"] >= point["cost_per_hour"]
    assert point["arrived_pct"] == 100
    assert point["unallocated_pct"] == pytest.approx(100 - point["allocated_pct"])
    assert out["cost_per_hour"] > 0


def test_summary_names_the_policy_and_the_numbers() -> None:
    text = summary(replay("most-allocated")[1])
    assert "policy most-allocated" in text and "unallocated GPUs" in text
