"""The typed, priced fleet: node list loading, the generated workload, and protection (no
untyped pod on a protected GPU when it is on, whatever the policy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from extender.model import RequestKind
from extender.simulator.errors import TraceError
from extender.simulator.fleet import FleetOptions, fleet_scenario, load_fleet_nodes
from extender.simulator.replay import Replay, ReplayOptions

HEADER = "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
PROTECTED = ("a100-80gb", "a800-80gb", "h800", "spot-series-2")


def fleet_csv(tmp_path: Path) -> Path:
    rows = ["A10,1,128,{}"] * 30 + ["A100-SXM4-80GB,8,128,{}"] * 6 + ["H800,8,192,{}"] * 3 + \
        ["GPU-series-1,4,192,{}"] * 3 + ["GPU-series-2,8,192,{}"] * 2
    path = tmp_path / "node_info_df.csv"
    path.write_text(HEADER + "".join(r.format(i) + "\n" for i, r in enumerate(rows)))
    return path


def test_nodes_map_onto_catalog_and_trace_local_types(tmp_path: Path) -> None:
    scenario = fleet_scenario(fleet_csv(tmp_path), FleetOptions(seed=1, mig_share=0.5))
    catalog = scenario.platform.catalog
    types = {catalog.id_of(n.gpus[0].type_index) for n in scenario.nodes}
    assert types == {"a10", "a100-80gb", "h800", "spot-series-1", "spot-series-2"}
    assert scenario.gpu_count == 30 + 48 + 24 + 12 + 16
    partitioned = [n for n in scenario.nodes if n.gpus[0].mig is not None]
    assert partitioned and all(catalog.types[n.gpus[0].type_index].mig for n in partitioned)
    kinds = {k.request.kind for k in scenario.kinds}
    assert kinds == {RequestKind.WHOLE, RequestKind.FRACTION, RequestKind.VRAM,
                     RequestKind.MIG}
    assert {k.label for k in scenario.kinds} == {"untyped", "typed", "mig"}
    demand = scenario.demand().sum()
    assert 0.7 * scenario.capacity_milli < demand < 1.4 * scenario.capacity_milli  # 0.98 x


def test_the_workload_is_seeded(tmp_path: Path) -> None:
    path = fleet_csv(tmp_path)
    a = fleet_scenario(path, FleetOptions(seed=4))
    b = fleet_scenario(path, FleetOptions(seed=4))
    c = fleet_scenario(path, FleetOptions(seed=5))
    assert np.array_equal(a.pod_kind, b.pod_kind)
    assert not np.array_equal(a.pod_kind[: len(c.pod_kind)], c.pod_kind[: len(a.pod_kind)])


def untyped_on_protected(result_by_label: dict[str, dict[str, float]]) -> float:
    return sum(v for t, v in result_by_label.get("untyped", {}).items() if t in PROTECTED)


@pytest.mark.parametrize("policy", ["cost-fragmentation", "fgd", "best-fit", "random"])
def test_protection_keeps_untyped_pods_off_protected_gpus(tmp_path: Path,
                                                          policy: str) -> None:
    path = fleet_csv(tmp_path)
    on = Replay(fleet_scenario(path, FleetOptions(seed=2)),
                ReplayOptions(policy=policy, seed=2)).run()
    assert untyped_on_protected(on.placed_by_label) == 0 == on.untyped_on_protected
    assert on.placed_by_label["untyped"]["pods"] > 0
    off = Replay(fleet_scenario(path, FleetOptions(seed=2, protect=False)),
                 ReplayOptions(policy=policy, seed=2)).run()
    assert untyped_on_protected(off.placed_by_label) > 0  # what protection prevents
    assert off.untyped_on_protected > 0


def test_bad_fleet_files(tmp_path: Path) -> None:
    path = tmp_path / "n.csv"
    path.write_text(HEADER + "K80,1,8,0\n")
    with pytest.raises(TraceError, match=r"n\.csv:2: column 'gpu_model' = 'K80': unknown"):
        load_fleet_nodes(path)
    path.write_text(HEADER + "A10,one,8,0\n")
    with pytest.raises(TraceError, match=r"column 'gpu_capacity_num' = 'one'"):
        load_fleet_nodes(path)
    path.write_text("gpu_model,cpu_num\nA10,8\n")
    with pytest.raises(TraceError, match=r"missing column\(s\) gpu_capacity_num, node_name"):
        load_fleet_nodes(path)
