"""The controller's metrics: demand objects by type and kind go back to zero once gone."""

from __future__ import annotations

from extender.demand.metrics import DemandMetrics


def test_objects_gauge_follows_what_exists() -> None:
    metrics = DemandMetrics()
    metrics.set_objects([("t4", "Pod", 2), ("l4", "Pod", 1)])
    metrics.set_objects([("t4", "Pod", 1)])  # the L4 pod went: its series reads 0
    text = metrics.exposition().decode()
    assert 'gpu_extender_demand_objects{kind="Pod",type="t4"} 1.0' in text
    assert 'gpu_extender_demand_objects{kind="Pod",type="l4"} 0.0' in text
