"""Decoded API objects -> inventory holdings (``InventoryApplier``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from extender.inventory.store import HoldingState, Inventory
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from extender.platform import Platform
from extender.sync.apply import InventoryApplier
from tests.builders import make_node, make_pod
from tests.sync.clusters import l4_node, mig_node, t4_node

UID = "uid-ml-p"


def setup(platform: Platform, *nodes: dict[str, Any]) -> tuple[Inventory, InventoryApplier]:
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    applier.replace_nodes(list(nodes))
    return inventory, applier


def l4_assignment(node: str, *indices: int) -> Assignment:
    return Assignment(node, RequestKind.WHOLE,
                      tuple(GpuGrant(i, 23034, whole=True) for i in indices), "l4")


def bound_pod(node: str, count: int = 1, assignment: Assignment | None = None,
              name: str = "p") -> dict[str, Any]:
    builder = make_pod(name).namespace("ml").uid(f"uid-ml-{name}").gpus(count) \
        .node_name(node).phase("Running")
    if assignment is not None:
        builder = builder.assigned(assignment)
    return builder.obj()


def free_gpus(inventory: Inventory, node: str) -> list[int]:
    snapshot = inventory.snapshot()
    row = snapshot.node_index[node]
    present = snapshot.gpu_type[row] >= 0
    return np.flatnonzero(present & (snapshot.pods[row] == 0)).tolist()


def test_an_annotated_bound_pod_holds_exactly_its_annotation(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"))
    applier.pod_event("ADDED", bound_pod("n1", 2, l4_assignment("n1", 1, 3)))
    holding = inventory.holding(UID)
    assert holding is not None and holding.state is HoldingState.OBSERVED
    assert holding.assignment is not None and holding.assignment.gpu_indices == (1, 3)
    assert free_gpus(inventory, "n1") == [0, 2]


def test_a_pod_bound_by_another_scheduler_has_its_gpus_inferred_once(
        platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"))
    applier.pod_event("ADDED", bound_pod("n1", 3))
    assert len(free_gpus(inventory, "n1")) == 1
    first = inventory.holding(UID)
    assert first is not None and first.assignment is not None
    generation = inventory.generation
    applier.pod_event("MODIFIED", bound_pod("n1", 3))  # e.g. a status update
    again = inventory.holding(UID)
    assert again is not None and again.assignment == first.assignment
    assert inventory.generation == generation
    assert applier.inferred_total == 1


def test_an_annotation_for_another_node_is_ignored(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"), l4_node("n2"))
    applier.pod_event("ADDED", bound_pod("n2", 1, l4_assignment("n1", 0)))
    holding = inventory.holding(UID)
    assert holding is not None and holding.node == "n2"
    assert free_gpus(inventory, "n1") == [0, 1, 2, 3]
    assert len(free_gpus(inventory, "n2")) == 3


def test_an_untyped_pod_another_scheduler_put_on_a_protected_type_is_counted(
        platform: Platform) -> None:
    a100 = make_node("a1").gfd("NVIDIA-A100-SXM4-80GB", count=8, memory=81920) \
        .allocatable(gpu=8).obj()
    inventory, applier = setup(platform, a100)
    applier.pod_event("ADDED", bound_pod("a1", 2))  # untyped: filter would refuse a100
    holding = inventory.holding(UID)
    assert holding is not None and holding.assignment is not None
    assert len(holding.assignment.grants) == 2
    assert len(free_gpus(inventory, "a1")) == 6


def test_a_mig_pod_bound_elsewhere_gets_a_legal_instance(platform: Platform) -> None:
    inventory, applier = setup(platform, mig_node("m1"))
    applier.pod_event("ADDED", make_pod("p").namespace("ml").uid(UID).mig("3g.40gb")
                      .node_name("m1").obj())
    holding = inventory.holding(UID)
    assert holding is not None and holding.assignment is not None
    assert holding.assignment.grants[0].mig_profile == "3g.40gb"


def test_finished_and_deleted_pods_are_forgotten(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"))
    applier.pod_event("ADDED", bound_pod("n1", 4))
    assert free_gpus(inventory, "n1") == []
    finished = bound_pod("n1", 4)
    finished["status"]["phase"] = "Succeeded"
    applier.pod_event("MODIFIED", finished)
    assert inventory.holding(UID) is None
    assert free_gpus(inventory, "n1") == [0, 1, 2, 3]
    applier.pod_event("ADDED", bound_pod("n1", 1, name="q"))
    applier.pod_event("DELETED", bound_pod("n1", 1, name="q"))
    assert inventory.holding("uid-ml-q") is None


def test_events_of_an_unbound_pod_never_drop_a_live_reservation(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"))
    key = PodKey("ml", "p", UID)
    inventory.assume(key, l4_assignment("n1", 0), ttl=30)
    pending = make_pod("p").namespace("ml").uid(UID).gpus(1).obj()
    applier.pod_event("MODIFIED", pending)  # e.g. our own annotation patch
    holding = inventory.holding(UID)
    assert holding is not None and holding.state is HoldingState.ASSUMED
    inventory.finish_binding(UID)
    applier.pod_event("MODIFIED", pending)  # a stale event from before the Binding
    holding = inventory.holding(UID)
    assert holding is not None and holding.state is HoldingState.BOUND
    applier.pod_event("MODIFIED", bound_pod("n1", 1, l4_assignment("n1", 0)))
    holding = inventory.holding(UID)
    assert holding is not None and holding.state is HoldingState.OBSERVED
    assert free_gpus(inventory, "n1") == [1, 2, 3]


def test_node_heartbeats_change_nothing(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"))
    generation = inventory.generation
    heartbeat = l4_node("n1")
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True",
                                          "lastHeartbeatTime": "2026-01-01T00:00:10Z"}]
    heartbeat["metadata"]["resourceVersion"] = "999"
    applier.node_event("MODIFIED", heartbeat)
    assert inventory.generation == generation


def test_a_pod_seen_before_its_node_is_inferred_when_the_node_arrives(
        platform: Platform) -> None:
    inventory, applier = setup(platform)
    applier.pod_event("ADDED", bound_pod("late", 2))
    holding = inventory.holding(UID)
    assert holding is not None and holding.assignment is None
    applier.node_event("ADDED", l4_node("late"))
    holding = inventory.holding(UID)
    assert holding is not None and holding.assignment is not None
    assert len(free_gpus(inventory, "late")) == 2


def test_a_deleted_node_keeps_its_pods_until_it_returns(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"))
    applier.pod_event("ADDED", bound_pod("n1", 1, l4_assignment("n1", 2)))
    applier.node_event("DELETED", l4_node("n1"))
    assert "n1" not in inventory.snapshot().node_index
    applier.node_event("ADDED", l4_node("n1"))
    assert free_gpus(inventory, "n1") == [0, 1, 3]


def test_relisting_pods_repairs_drift_and_keeps_reservations(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"), t4_node("t1"))
    applier.pod_event("ADDED", bound_pod("n1", 1, l4_assignment("n1", 0), name="gone"))
    inventory.assume(PodKey("ml", "inflight", "uid-ml-inflight"), l4_assignment("n1", 3),
                      ttl=30)
    repairs = applier.replace_pods([bound_pod("n1", 1, l4_assignment("n1", 1), name="new")])
    assert repairs["pods_removed"] == 1 and repairs["pods_added"] == 1
    assert inventory.holding("uid-ml-gone") is None
    held = inventory.holding("uid-ml-inflight")
    assert held is not None and held.state is HoldingState.ASSUMED
    assert free_gpus(inventory, "n1") == [0, 2]


def test_relisting_nodes_keeps_pods(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("n1"), l4_node("n2"))
    applier.pod_event("ADDED", bound_pod("n1", 1, l4_assignment("n1", 0)))
    repairs = applier.replace_nodes([l4_node("n1"), t4_node("t9")])
    assert repairs["nodes_removed"] == 1 and repairs["nodes_added"] == 1
    assert free_gpus(inventory, "n1") == [1, 2, 3]
    assert inventory.holding(UID) is not None
