"""Scorers worked by hand: least/most-allocated, best-fit, the registry, and the building
blocks of the default strategy (cost of what a pod takes, dF from FGD's fragmentation)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from extender.core.fit import fit
from extender.core.scoring.base import StrategyContext
from extender.core.scoring.capacity import free_by_type, request_fraction, used_fraction
from extender.core.scoring.cost_fragmentation import CheapestFirst
from extender.core.scoring.registry import make_strategy, strategy_names
from extender.core.workload import Shape, WorkloadMix
from extender.inventory import ClusterSnapshot
from extender.model import GpuRequest
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
)


def scores(name: str, snap: ClusterSnapshot, req: GpuRequest, cpu: int = 0) -> list[float]:
    preq = placement(req, "platform", cpu)
    result = fit(snap, preq, snap.valid_rows())
    strategy = make_strategy(name, StrategyContext(catalog(), platform().config.scoring))
    return [round(float(s), 6) for s in strategy.score(snap, preq, result).scores]


def four_and_eight() -> ClusterSnapshot:
    inv = inventory(node("four", "t4", 4), node("eight", "t4", 8))
    place(inv, request("whole", 1), "four")
    return inv.snapshot()


ALLOCATION_CASES = [
    pytest.param("least-allocated", [50.0, 87.5],
                 # four: used 1 + the pod's 1 = 2 of 4 -> (4-2)*100/4 = 50
                 # eight: 0 + 1 = 1 of 8 -> (8-1)*100/8 = 87.5
                 id="least-allocated: (4-2)*100/4 = 50 and (8-1)*100/8 = 87.5"),
    pytest.param("most-allocated", [50.0, 12.5],
                 id="most-allocated: 2*100/4 = 50 and 1*100/8 = 12.5"),
]


@pytest.mark.parametrize(("name", "expected"), ALLOCATION_CASES)
def test_allocation_scores(name: str, expected: list[float]) -> None:
    assert scores(name, four_and_eight(), request("whole", 1)) == expected


def test_a_share_counts_what_it_takes_of_its_best_gpu() -> None:
    # one T4 with a 4096 MiB share: used 4096/16384 = 0.25; the pod takes another 0.25 ->
    # requested 0.5 of 1 GPU: least (1-0.5)*100/1 = 50, most 50
    inv = inventory(node("n", "t4", 1))
    place(inv, request("vram", vram=4096), "n")
    snap = inv.snapshot()
    assert scores("least-allocated", snap, request("vram", vram=4096)) == [50.0]
    assert scores("most-allocated", snap, request("vram", vram=4096)) == [50.0]


def test_used_fraction_reads_slots_replicas_and_vram() -> None:
    # T4 with 4096 MiB held: 0.25; L4 4-way sliced with 1 replica (6144 MiB) held: max(1/4,
    # 6144/24576) = 0.25; A100 with a 3g.40gb: 4 of 8 slots = 0.5
    inv = inventory(node("n", gpus=[gpu("t4", 0), gpu("l4", 1, replicas=4, shared=True),
                                    gpu("a100-80gb", 2, mig="dynamic")]))
    place(inv, request("vram", vram=4096), "n")
    place(inv, request("shared", 1), "n")
    place(inv, request("mig", 1, mig="3g.40gb"), "n")
    snap = inv.snapshot()
    rows = snap.valid_rows()
    assert used_fraction(snap, rows)[0, :3].tolist() == pytest.approx([0.25, 0.25, 0.5])
    mig_take = request_fraction(snap, placement(request("mig", 1, mig="1g.10gb")), rows)
    assert mig_take[0, 2] == pytest.approx(1 / 8)  # 1g.10gb spans 1 of 8 slots


def test_best_fit_prefers_the_node_left_with_less_free_capacity() -> None:
    # pod: 1 whole GPU, 0 CPU. Both nodes have 64000m free CPU.
    # small (1 T4):  s = 0.5*64000/128000 + 0.5*(1000-1000)/8000 = 0.25   -> 100*(1-s) = 75
    # large (2 T4s): s = 0.25 + 0.5*(2000-1000)/8000 = 0.3125             -> 68.75
    # min-max: 75 -> 100, 68.75 -> 0
    snap = inventory(node("small", "t4", 1), node("large", "t4", 2)).snapshot()
    assert scores("best-fit", snap, request("whole", 1)) == [100.0, 0.0]
    ref = reference()
    raw = [ref.best_fit_raw(snap, request("whole", 1), row, [1] * snap.n_gpus)
           for row in (0,)]
    assert raw == [pytest.approx(75.0)]


def test_best_fit_gives_every_node_100_when_all_are_equal() -> None:
    snap = inventory(node("a", "t4", 1), node("b", "t4", 1)).snapshot()
    assert scores("best-fit", snap, request("whole", 1)) == [100.0, 100.0]


def test_the_registry_lists_every_builtin_strategy() -> None:
    assert {"best-fit", "cost-fragmentation", "fgd", "least-allocated", "most-allocated"} <= \
        set(strategy_names())
    with pytest.raises(KeyError, match=r"accepted: .*best-fit"):
        make_strategy("nope", StrategyContext(catalog(), platform().config.scoring))


COST_CASES = [
    pytest.param(request("fraction", milli=500), "t4", 0.265,
                 id="0.5 of a T4 at 0.53 $/h costs 0.53*0.5 = 0.265"),
    pytest.param(request("whole", 1, types=["a100"]), "a100-80gb", 3.43,
                 id="a whole A100-80GB costs its price, 3.43"),
    pytest.param(request("whole", 2), "t4", 1.06,
                 id="two whole T4s cost 2*0.53 = 1.06"),
    pytest.param(request("vram", vram=4096), "l4", 0.8 * 4096 / 24576,
                 id="4096 MiB of a 24576 MiB L4 costs 0.80*4096/24576 = 0.1333"),
    pytest.param(request("mig", 1, mig="3g.40gb", types=["a100"]), "a100-80gb", 3.43 * 4 / 8,
                 id="a 3g.40gb spans 4 of 8 slots of an A100-80GB: 3.43*4/8 = 1.715"),
]


@pytest.mark.parametrize(("req", "type_id", "expected"), COST_CASES)
def test_cost_of_what_a_pod_takes(req: GpuRequest, type_id: str, expected: float) -> None:
    mig = "dynamic" if req.mig_profile else None
    snap = inventory(node("n", type_id, 2, mig=mig)).snapshot()
    preq = placement(req, "platform")
    result = fit(snap, preq, snap.valid_rows())
    # what cheapest-first ranks by first: price x GPU-equivalents the pod takes
    strategy = make_strategy("cheapest-first",
                             StrategyContext(catalog(), platform().config.scoring))
    assert isinstance(strategy, CheapestFirst)
    rows, cost = strategy.hourly_cost(snap, preq, result)
    assert rows.tolist() == [0]
    assert float(cost[0]) == pytest.approx(expected)
    want = reference().cost(snap, req, 0, [int(u) for u in result.units[0]], -1)
    assert want == pytest.approx(expected)


def test_free_by_type_sums_nodes_whole_and_mixed_nodes_gpu_by_gpu() -> None:
    # homogeneous T4 node: 2 GPUs, one holds 4096 of 16384 MiB -> 2 - 0.25 = 1.75 free;
    # mixed node: a free T4 (1) and an L4 with a 6144 MiB share (1 - 0.25 = 0.75)
    inv = inventory(node("a", gpus=[gpu("t4", 0), gpu("t4", 1)]),
                    node("b", gpus=[gpu("t4", 0), gpu("l4", 1)]))
    place(inv, request("vram", vram=4096), "a")
    place(inv, request("vram", vram=6144, types=["l4"]), "b")
    free = free_by_type(inv.snapshot())
    assert free[catalog().index_of("t4")] == pytest.approx(2.75)
    assert free[catalog().index_of("l4")] == pytest.approx(0.75)


# -- the default's cost rules ------------------------------------------------------------------

IDLE_FLEET = (("l40s", 1.86), ("t4", 0.53), ("l4", 0.80), ("a10g", 1.01), ("a100-80gb", 3.43))


def idle_fleet(order: Sequence[int], count: int = 1) -> ClusterSnapshot:
    return inventory(*(node(f"n-{IDLE_FLEET[i][0]}", IDLE_FLEET[i][0], count)
                       for i in order)).snapshot()


def top_node(snap: ClusterSnapshot, req: GpuRequest, weights: dict[str, float] | None = None,
             seed: int = 0) -> str:
    preq = placement(req)
    result = fit(snap, preq, snap.valid_rows())
    config = platform().config.scoring
    if weights is not None:
        config = dataclasses.replace(config, weights=weights)
    strategy = make_strategy("cost-fragmentation", StrategyContext(
        catalog(), config, rng=np.random.default_rng(seed)))
    out = strategy.score(snap, preq, result)
    best = np.flatnonzero(out.scores == out.scores.max())
    assert len(best) == 1  # the default never ties: the top node alone scores 100
    return snap.node_names[int(out.rows[best[0]])]


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("seed", range(5))
def test_an_untyped_pod_on_an_idle_fleet_opens_the_cheapest_unprotected_type(
        seed: int, count: int) -> None:
    # prices: T4 0.53 < L4 0.80 < A10G 1.01 < L40S 1.86 $/h (A100 3.43 is protected): every
    # node idle and equally good for fragmentation -> the T4, whatever the node order
    order = np.random.default_rng(seed).permutation(len(IDLE_FLEET)).tolist()
    assert catalog().price[catalog().index_of("t4")] == pytest.approx(0.53)
    snap = idle_fleet(order, count)
    assert top_node(snap, request("whole", 1), seed=seed) == "n-t4"
    assert top_node(snap, request("fraction", milli=500), seed=seed) == "n-t4"
    # without the T4 node: the next cheapest, L4
    without = idle_fleet([i for i in order if IDLE_FLEET[i][0] != "t4"], count)
    assert top_node(without, request("whole", 1), seed=seed) == "n-l4"


def test_idle_price_off_falls_back_to_the_fixed_node_order() -> None:
    # with weights.idlePrice 0 the idle nodes are ranked by the salted hash only: over a few
    # seeds the T4 is not always first
    picks = {top_node(idle_fleet(range(len(IDLE_FLEET))), request("whole", 1),
                      {"idlePrice": 0.0}, seed) for seed in range(8)}
    assert picks != {"n-t4"}


def cpu_mix(cpu_only_milli: int) -> WorkloadMix:
    """Half the pods 1 GPU with 16 CPU, half CPU-only with ``cpu_only_milli``."""
    return WorkloadMix(prior=[(Shape(1, cpu_milli=16_000), 1.0),
                              (Shape(0, milli=0, cpu_milli=cpu_only_milli), 1.0)])


CPU_GATE_CASES = [
    # the idle fleet: 5 nodes of 1 GPU and 64 CPU -> 320 free CPU / 5 free GPUs = 64 per GPU;
    # the price orders idle nodes while the mix asks <= 0.9 x 64 = 57.6 CPU per GPU
    pytest.param(16_000, True, id="mix 16 + 16 = 32 CPU per GPU <= 57.6: the cheapest node"),
    pytest.param(40_000, True, id="mix 16 + 40 = 56 CPU per GPU <= 57.6: the cheapest node"),
    pytest.param(44_000, False, id="mix 16 + 44 = 60 CPU per GPU > 57.6: the fixed order"),
]


@pytest.mark.parametrize(("cpu_only", "priced"), CPU_GATE_CASES)
def test_the_idle_price_orders_idle_nodes_only_while_cpu_is_to_spare(
        cpu_only: int, priced: bool) -> None:
    snap = idle_fleet(range(len(IDLE_FLEET)))
    picks = set()
    for seed in range(8):
        preq = placement(request("whole", 1), "", 16_000)
        strategy = make_strategy("cost-fragmentation", StrategyContext(
            catalog(), platform().config.scoring, workload=cpu_mix(cpu_only),
            rng=np.random.default_rng(seed)))
        out = strategy.score(snap, preq, fit(snap, preq, snap.valid_rows()))
        picks.add(snap.node_names[int(out.rows[int(np.argmax(out.scores))])])
    assert (picks == {"n-t4"}) is priced


def test_a_used_node_is_still_preferred_to_opening_a_cheaper_idle_one() -> None:
    # the L40S node already holds a pod and has a free GPU of the same fragmentation cost:
    # consolidation comes before price (an elastic pool pays nothing more for it)
    inv = inventory(node("n-l40s", "l40s", 2), node("n-t4", "t4", 2))
    place(inv, request("whole", 1), "n-l40s")
    assert top_node(inv.snapshot(), request("whole", 1)) == "n-l40s"


def test_a_pod_that_names_two_types_gets_the_cheaper_on_used_nodes_too() -> None:
    # a10g|l40s on two used nodes with equal keys otherwise: A10G (1.01) before L40S (1.86)
    for seed in range(5):
        inv = inventory(node("n-l40s", "l40s", 2), node("n-a10g", "a10g", 2))
        place(inv, request("whole", 1), "n-l40s")
        place(inv, request("whole", 1), "n-a10g")
        assert top_node(inv.snapshot(), request("whole", 1, types=["a10g", "l40s"]),
                        seed=seed) == "n-a10g"
