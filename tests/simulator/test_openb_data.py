"""The real openb trace (read in place from ../shared/data; skipped where it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.core.workload import typical_shapes
from extender.simulator.replay import Replay, ReplayOptions
from extender.simulator.scenario import Scenario, openb_scenario
from extender.simulator.trace import load_trace

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "openb"
NODES = DATA / "openb_node_list_gpu_node.csv"
DEFAULT = DATA / "openb_pod_list_default.csv"

pytestmark = pytest.mark.skipif(not DEFAULT.exists(), reason="openb trace files not present")


def default_scenario() -> Scenario:
    return openb_scenario(load_trace(NODES, DEFAULT))


def test_the_default_trace_as_the_reference_describes_it() -> None:
    scenario = default_scenario()
    assert len(scenario.nodes) == 1213 and scenario.gpu_count == 6212
    assert len(scenario.pod_kind) == 8152
    assert scenario.demand().sum() == pytest.approx(6_087_000, rel=0.001)
    assert sum(scenario.typical.values()) == 8152
    assert len(scenario.typical) == 91  # distinct (cpu, gpu_milli, num_gpu, gpu_spec) shapes
    assert len(typical_shapes(scenario.typical)) == 35  # the top 35 cover 95 %


@pytest.mark.slow
def test_fgd_reproduces_the_published_curve_and_the_default_beats_it() -> None:
    scenario = default_scenario()
    fgd = Replay(scenario, ReplayOptions(policy="fgd", seed=42)).run()
    assert fgd.pods > 10_500  # inflated to 1.3 x 6,212 GPUs
    unallocated = fgd.unallocated_at(100)
    assert unallocated is not None
    assert abs(unallocated - 4.77) < 0.5  # the published median over seeds 42-51
    ours = Replay(scenario, ReplayOptions(policy="cost-fragmentation", seed=42)).run()
    assert ours.unallocated_at(100) is not None
    assert ours.unallocated_at(100) < unallocated  # type: ignore[operator]
