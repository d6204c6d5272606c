"""Why free GPUs are free (``extender.simulator.stranding``): one cause per node's free GPUs,
and the replay that records the breakdown at an arrived %."""

from __future__ import annotations

import numpy as np
import pytest

from extender.inventory import Inventory
from extender.model import GpuRequest
from extender.simulator.divergence import ShadowReplay
from extender.simulator.openb import platform_for_models
from extender.simulator.replay import ReplayOptions, _Kind
from extender.simulator.scenario import PodKind, Scenario
from extender.simulator.stranding import Cause, StrandingReplay, breakdown
from tests.simulator.helpers import inventory, node, place, platform, share, whole


def kind(request: GpuRequest, cpu: int = 1000, memory: int = 1000) -> _Kind:
    pod = PodKind(request, cpu_milli=cpu, memory_mib=memory, demand_milli=1000)
    placement = platform().placement_request(request, cpu_milli=cpu, memory_mib=memory)
    return _Kind(pod, placement, np.zeros(0, dtype=np.int64))


def causes(inv: Inventory, *kinds: _Kind) -> dict[tuple[str, str], float]:
    found = breakdown(inv.snapshot(), kinds, 100.0)
    return {(c.value, label): round(v, 3) for (c, label), v in found.free.items()}


@pytest.mark.parametrize(("case", "nodes", "placed", "kinds", "expected"), [
    # 2 GPUs, 4 CPU; one 1-GPU pod with 3 CPU placed: 1 GPU free, 1 CPU left < 3 asked
    ("cpu", [node("a", 2, cpu=4000)], [("a", whole(1), 3000)], [kind(whole(1), cpu=3000)],
     {("cpu exhausted", "t4 x2"): 1.0}),
    # the same node with 64 CPU: the free GPU still takes a 3-CPU pod
    ("usable", [node("a", 2)], [("a", whole(1), 3000)], [kind(whole(1), cpu=3000)],
     {("usable", "t4 x2"): 1.0}),
    # 5,000 MiB of memory, pods asking 6,000 (CPU plenty): both GPUs free for lack of memory
    ("memory", [node("a", 2, memory=5000)], [], [kind(whole(1), memory=6000)],
     {("memory exhausted", "t4 x2"): 2.0}),
    # a 0.6 share on a 1-GPU node: 0.4 left, below the only kind's 0.6
    ("partial", [node("a", 1)], [("a", share(600), 0)], [kind(share(600))],
     {("partial GPUs", "t4 x1"): 0.4}),
    # a 1-GPU node and only 2-GPU pods: the whole GPU is free and no kind fits it
    ("whole", [node("a", 1)], [], [kind(whole(2))], {("whole GPUs, no kind fits", "t4 x1"): 1.0}),
    # a 2-GPU node, one share of 0.6 and 2-GPU pods only: the whole GPU and the 0.4 slice
    # are stranded each under its own cause
    ("both", [node("a", 2)], [("a", share(600), 0)], [kind(whole(2))],
     {("whole GPUs, no kind fits", "t4 x2"): 1.0, ("partial GPUs", "t4 x2"): 0.4}),
    # CPU-only kinds are not asked: nothing fits the GPUs, which stay whole and stranded
    ("cpu-only kind", [node("a", 1)], [], [kind(whole(0))],
     {("whole GPUs, no kind fits", "t4 x1"): 1.0}),
    # a full node has nothing free, so no entry
    ("full", [node("a", 1)], [("a", whole(1), 0)], [kind(whole(1))], {}),
])
def test_each_free_gpu_gets_the_first_cause_that_holds(
        case: str, nodes: list, placed: list, kinds: list[_Kind],
        expected: dict[tuple[str, str], float]) -> None:
    inv = inventory(*nodes)
    for name, request, cpu in placed:
        place(inv, name, request, cpu=cpu)
    assert causes(inv, *kinds) == expected, case


def test_the_breakdown_sums_to_the_free_gpus_and_counts_nodes() -> None:
    # two CPU-starved 2-GPU nodes and one usable: 1 + 1 stranded by CPU, 2 usable, of 6 GPUs
    inv = inventory(node("a", 2, cpu=4000), node("b", 2, cpu=4000), node("c", 2))
    for name in ("a", "b"):
        place(inv, name, whole(1), cpu=3000)
    found = breakdown(inv.snapshot(), [kind(whole(1), cpu=3000)], 100.0)
    assert found.total() == 4.0 and found.gpus == 6.0
    assert found.nodes[(Cause.CPU, "t4 x2")] == 2
    assert found.pct(Cause.CPU) == pytest.approx(100 * 2 / 6)
    assert found.pct(Cause.USABLE) == pytest.approx(100 * 2 / 6)


def scenario(pods: int) -> Scenario:
    platform_ = platform_for_models((), strategy="cost-fragmentation", weights={})
    kinds = (PodKind(whole(1), cpu_milli=3000, memory_mib=1000, demand_milli=1000),)
    return Scenario(name="cpu", platform=platform_, nodes=(node("a", 2, cpu=4000),),
                    kinds=kinds, pod_kind=np.zeros(pods, dtype=np.int64),
                    pod_names=tuple(f"p{i}" for i in range(pods)))


def test_the_replay_records_the_breakdown_when_the_arrivals_reach_it() -> None:
    # 2 pods of 1 GPU on a 2-GPU node: the second arrives at 50 % arrived and fails (1 CPU
    # left of the 3 it asks), so at 50 % and at the end 1 GPU is free for lack of CPU
    replay = StrandingReplay(scenario(2), ReplayOptions(seed=42, inflate=0), at=(50.0, 100.0))
    result = replay.run()
    assert (result.placed, result.failed) == (1, 1)
    assert [b.arrived_pct for b in replay.breakdowns] == [50.0]
    assert replay.breakdowns[0].free == {(Cause.CPU, "t4 x2"): 1.0}
    assert replay.final is not None and replay.final.arrived_pct == 100.0
    assert replay.final.free == {(Cause.CPU, "t4 x2"): 1.0}


def test_a_shadow_of_another_policy_is_asked_and_one_fed_placements_refused() -> None:
    shadow = platform_for_models((), strategy="fgd")
    replay = ShadowReplay(scenario(2), ReplayOptions(seed=42, inflate=0), shadow, "fgd")
    replay.run()
    assert replay.divergences == []  # one node: both choose it
    assert replay.final is not None
    with pytest.raises(ValueError, match="gpu-clustering"):
        ShadowReplay(scenario(2), ReplayOptions(seed=42, inflate=0), shadow, "gpu-clustering")


@pytest.mark.parametrize(("rare", "common", "expected"), [
    # a 0.6 share left 0.4: 0.3-shares fit it, 0.5-shares do not. 1 of 20 GPU pods is a
    # 0.3-share: 5 % of the pods could use the slice, below the 10 % floor -> stranded
    (1, 19, {("partial GPUs", "t4 x1"): 0.4}),
    # 2 of 10 (20 %): enough pods could use it -> usable
    (2, 8, {("usable", "t4 x1"): 0.4}),
])
def test_a_free_gpu_only_rare_kinds_can_use_is_stranded(
        rare: int, common: int, expected: dict[tuple[str, str], float]) -> None:
    inv = inventory(node("a", 1))
    place(inv, "a", share(600))
    found = breakdown(inv.snapshot(), [kind(share(300)), kind(share(500)), kind(whole(0))],
                      100.0, weights=[rare, common, 50])  # CPU-only pods weigh nothing
    assert {(c.value, label): round(v, 3) for (c, label), v in found.free.items()} == expected
