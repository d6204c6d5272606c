"""Every bind leaves a Normal event on the pod that names its GPUs, their type and why that
node (written with the extender's shipped RBAC), and explain of the bound pod shows the same
placement with the chosen node against the runner-up."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from tests.e2e.gpu_helpers import (
    NAMESPACE,
    create_pods,
    gpu_cluster,
    gpu_pod,
    make_priced_fleet,
    wait_bound,
)

pytestmark = pytest.mark.e2e


def assigned_event(cluster: LocalCluster, name: str) -> Any:
    def found() -> Any:
        events = [e for e in cluster.events_for_pod(NAMESPACE, name)
                  if e.reason == "GpuAssigned"]
        return events[0] if events else None

    return cluster.wait_for(found, timeout_s=30, description=f"a GpuAssigned event on {name}")


def explain(cluster: LocalCluster, name: str) -> dict[str, Any]:
    url = f"{cluster.extender_url}/debug/explain/{NAMESPACE}/{name}"
    with urllib.request.urlopen(url, timeout=10) as response:
        report: dict[str, Any] = json.loads(response.read())
    return report


def test_a_bound_pod_gets_a_normal_event_with_its_gpus_and_type(
        controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        make_priced_fleet(cluster)
        # An untyped pod on an idle fleet: equal fragmentation on T4 and L4, both idle, so
        # the price decides (idlePrice): the T4.
        create_pods(cluster, [gpu_pod("cheap", {"nvidia.com/gpu": 1})])
        assert wait_bound(cluster, "cheap") == "t4-0"
        event = assigned_event(cluster, "cheap")
        assert event.type == "Normal"
        assert event.message.startswith(
            "assigned GPU 0 (t4) on node t4-0: cheapest fitting type, fragmentation ")
        assert event.message.endswith("GPU, $0.53/h")
        # A typed pod taking two whole A100s: the only node of its type.
        create_pods(cluster, [gpu_pod("big", {"nvidia.com/gpu": 2},
                                      labels={"gpu-extender.io/accelerator": "a100-80gb"})])
        assert wait_bound(cluster, "big") == "a100-0"
        event = assigned_event(cluster, "big")
        assert event.type == "Normal"
        assert event.message.startswith(
            "assigned GPU 0,1 (a100-80gb) on node a100-0: the only node that fits")
        report = explain(cluster, "cheap")
        assert report["status"] == "bound"
        placement = report["placement"]
        assert placement["assignment"]["gpus"] == [0]
        assert placement["assignment"]["type"] == "t4"
        breakdown = placement["breakdown"]
        assert breakdown["chosen"]["node"] == "t4-0"
        assert breakdown["runnerUp"]["node"] == "l4-0"
        assert breakdown["decidedBy"] == "price"
        record = os.environ.get("GPU_EXTENDER_RECORD_EXPLAIN")
        if record:  # for the notes: a real explain and real event texts
            with open(record, "w") as out:
                json.dump({"events": [assigned_event(cluster, n).message
                                      for n in ("cheap", "big")], "explain": report}, out,
                          indent=2)


def test_with_placement_events_off_the_pod_is_placed_and_explained_without_an_event(
        controlplane_binaries: object) -> None:
    config = Path(__file__).parent / "data" / "no-placement-events.yaml"
    with gpu_cluster(extender_config=config) as cluster:
        make_priced_fleet(cluster)
        create_pods(cluster, [gpu_pod("quiet", {"nvidia.com/gpu": 1})])
        assert wait_bound(cluster, "quiet") == "t4-0"

        def explained() -> Any:
            report = explain(cluster, "quiet")
            placement = report.get("placement") or {}
            return report if placement.get("breakdown") else None

        # the explanation is composed where the event would be written: once it is there,
        # the event would have been written next (the same writer thread)
        report = cluster.wait_for(explained, timeout_s=30, description="quiet's explanation")
        assert report["placement"]["assignment"]["type"] == "t4"

        def reasons() -> list[str]:
            return [e.reason for e in cluster.events_for_pod(NAMESPACE, "quiet")]

        # kube-scheduler's own event still comes (its broadcaster writes it after the bind)
        cluster.wait_for(lambda: "Scheduled" in reasons(), timeout_s=30,
                         description="kube-scheduler's Scheduled event on quiet")
        time.sleep(1.0)
        assert "GpuAssigned" not in reasons()


def test_paced_events_still_come_for_every_placement_once_the_burst_is_over(
        controlplane_binaries: object) -> None:
    # service.eventQPS 0.2 / eventBurst 1: during a burst, one event, then one per 5 s; the
    # rest wait, composed, until no bind has come for a second, then are all written
    config = Path(__file__).parent / "data" / "paced-events.yaml"
    names = [f"burst-{i}" for i in range(4)]  # the four unprotected GPUs of the fleet
    with gpu_cluster(extender_config=config) as cluster:
        make_priced_fleet(cluster)
        create_pods(cluster, [gpu_pod(name, {"nvidia.com/gpu": 1}) for name in names])
        nodes = sorted(wait_bound(cluster, name) for name in names)
        assert nodes == ["l4-0", "l4-0", "t4-0", "t4-0"]
        started = time.monotonic()
        messages = [assigned_event(cluster, name).message for name in names]
        # all four within a few seconds: not 3 x 5 s at the pace (the burst ended)
        assert time.monotonic() - started < 12
        assert all(m.startswith("assigned GPU ") for m in messages)
        with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
        deferred = [line for line in metrics.splitlines()
                    if line.startswith("gpu_extender_events_deferred_total ")]
        assert deferred and float(deferred[0].split()[1]) >= 1, deferred
