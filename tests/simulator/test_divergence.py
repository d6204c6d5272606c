"""The divergence log (``extender.simulator.divergence``): where two settings of one policy
would place a pod on different nodes."""

from __future__ import annotations

import numpy as np

from extender.simulator.divergence import ShadowReplay, summarise
from extender.simulator.openb import platform_for_models
from extender.simulator.replay import ReplayOptions
from extender.simulator.scenario import PodKind, Scenario
from tests.simulator.helpers import node, whole

# idle nodes of different prices: 1 x T4 (0.53 $/h), 1 x L4 (0.80), 1 x A10G (1.01)
NODES = (node("t4", 1, type_id="t4"), node("l4", 1, type_id="l4"),
         node("a10g", 1, type_id="a10g"))


def scenario(idle_price: float) -> Scenario:
    platform = platform_for_models((), strategy="cost-fragmentation",
                                   weights={"idlePrice": idle_price})
    kinds = (PodKind(whole(1), cpu_milli=1000, memory_mib=1000, demand_milli=1000),)
    return Scenario(name="idle", platform=platform, nodes=NODES, kinds=kinds,
                    pod_kind=np.zeros(3, dtype=np.int64),
                    pod_names=("p0", "p1", "p2"))


def run(main: float, shadow: float, seed: int) -> ShadowReplay:
    replay = ShadowReplay(scenario(main), ReplayOptions(seed=seed, inflate=0),
                          scenario(shadow).platform)
    replay.run()
    return replay


def test_the_same_setting_never_diverges() -> None:
    for seed in range(4):
        assert run(1.0, 1.0, seed).divergences == []


def test_the_cheap_opening_rule_diverges_from_the_fixed_order_on_price() -> None:
    # idlePrice 1 opens T4, then L4, then A10G (cheapest first); idlePrice 0 follows the
    # salted node order, which differs from the price order for some seeds
    records = [d for seed in range(8) for d in run(1.0, 0.0, seed).divergences]
    assert records
    for record in records:
        assert record.main.idle and record.shadow.idle
        assert record.main.node_price < record.shadow.node_price
        assert record.pod.startswith("1 GPU(s)")
    first = [d for d in records if d.arrival == 0]
    assert first and all(d.main.type_id == "t4" for d in first)
    counts = summarise(records)
    assert sum(n for *_, n in counts) == len(records)
