"""The configuration bound (``extender.simulator.config_bound``): GPU configurations are the
maximal multisets of share sizes, and the bound sees what the pooled one lets pass as fluid."""

from __future__ import annotations

import numpy as np
import pytest

from extender.simulator.bound import offline_bound
from extender.simulator.config_bound import config_bound, maximal_configurations
from extender.simulator.scenario import PodKind, Scenario
from tests.simulator.helpers import node, platform, share, whole


@pytest.mark.parametrize(("sizes", "expected"), [
    # 500 + 500 = 1000; 500 + 300 = 800 (200 left < 300); 3 x 300 = 900 (100 left).
    # Not maximal: 500 alone (500 left), 2 x 300 (400 left).
    ([300, 500], {(0, 2), (1, 1), (3, 0)}),
    # 810 leaves 190, too little for 380; two 380s leave 240.
    ([380, 810], {(0, 1), (2, 0)}),
    # 4 x 250 = 1000 is the only maximal multiset.
    ([250], {(4,)}),
    ([], {()}),
])
def test_maximal_configurations(sizes: list[int], expected: set[tuple[int, ...]]) -> None:
    configs = maximal_configurations(sizes)
    assert {tuple(int(v) for v in row) for row in configs} == expected
    assert len(configs) == len(expected)
    if sizes:
        assert (configs @ np.array(sizes) <= 1000).all()


def scenario(*kinds: tuple[PodKind, int], gpus_per_node: int = 1, nodes: int = 2,
             cpu: int = 64_000) -> Scenario:
    pod_kind = np.concatenate([np.full(n, i, dtype=np.int64)
                               for i, (_, n) in enumerate(kinds)])
    return Scenario(name="tiny", platform=platform(),
                    nodes=tuple(node(f"n{i}", gpus_per_node, cpu=cpu) for i in range(nodes)),
                    kinds=tuple(k for k, _ in kinds), pod_kind=pod_kind,
                    pod_names=tuple(f"p{i:03d}" for i in range(len(pod_kind))))


def kind(milli: int = 0, count: int = 0, cpu: int = 1000) -> PodKind:
    request = share(milli) if milli else whole(count)
    return PodKind(request, cpu_milli=cpu, memory_mib=1000,
                   demand_milli=milli or count * 1000)


def test_a_share_too_large_for_what_another_leaves_is_not_fluid() -> None:
    # 2 GPUs; pods 0.81, 0.81, 0.38 (2.00 GPUs in all, every one arrives with inflate 0).
    # Pooled: the 0.81s take a GPU each, 0.38 packs as fluid into the 2 x 0.19 left: 0 %.
    # GPU by GPU: 0.81 leaves 0.19 < 0.38, so at most 1.62 of 2 GPUs: 19 % unallocated.
    tiny = scenario((kind(810), 2), (kind(380), 1))
    pooled = offline_bound(tiny, inflate=0)
    bound = config_bound(tiny, inflate=0)
    assert pooled.unallocated_pct == pytest.approx(0.0)
    assert (bound.lp_gpus, bound.ip_gpus) == pytest.approx((1.62, 1.62))
    assert bound.ip_unallocated_pct == pytest.approx(19.0)
    assert bound.optimal and bound.pods == 3 and bound.configurations == 2


def test_the_integer_program_is_tighter_than_its_relaxation() -> None:
    # 3 GPUs; pods 0.6 x 2, 0.5 x 3 (2.7 GPUs, all arrive). Configurations: {0.6} (0.4 left
    # < 0.5) and {0.5, 0.5}.
    # IP: {0.6}, {0.6}, {0.5, 0.5} = 2.2 GPUs (26.67 % of 3 unallocated).
    # LP: 1.5 GPUs in each: 1.5 x 0.6 + 3 x 0.5 = 2.4 (20 %).
    # Pooled: the 0.6s take a GPU each, the 0.5s pack as fluid: 2.7 (10 %).
    tiny = scenario((kind(600), 2), (kind(500), 3), nodes=3)
    bound = config_bound(tiny, inflate=0)
    assert (bound.lp_gpus, bound.ip_gpus) == pytest.approx((2.4, 2.2))
    assert (bound.lp_unallocated_pct, bound.ip_unallocated_pct) == \
        pytest.approx((20.0, 26.6667), abs=1e-4)
    assert offline_bound(tiny, inflate=0).unallocated_pct == pytest.approx(10.0)


def test_requests_it_does_not_model_are_refused() -> None:
    from extender.model import GpuRequest, RequestKind

    vram = PodKind(GpuRequest(RequestKind.VRAM, 1, vram_mib=500), 1000, 1000, 500)
    with pytest.raises(ValueError, match="does not model"):
        config_bound(scenario((vram, 1)), inflate=0)
