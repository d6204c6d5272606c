"""DRA objects -> the inventory (``sync/dra.py`` through ``InventoryApplier``): a DRA-managed
node's GPUs, the holds of allocated claims, and pods there holding no GPU of their own."""

from __future__ import annotations

from typing import Any

import numpy as np

from extender.core.fit import fit
from extender.core.reasons import Reason
from extender.inventory.store import Inventory
from extender.model import Assignment, GpuGrant, GpuRequest, PodKey, RequestKind
from extender.platform import Platform
from extender.sync.apply import InventoryApplier
from extender.sync.dra import DraState
from tests.builders import make_node, make_pod
from tests.core.helpers import reference
from tests.dra_objects import claim, device_class, gpu_device, mig_device, resource_slice, result
from tests.sync.clusters import l4_node

A100 = "NVIDIA A100-SXM4-80GB"


def setup(platform: Platform, *nodes: dict[str, Any]) -> tuple[Inventory, InventoryApplier]:
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory, dra=DraState(platform.catalog))
    applier.replace_nodes(list(nodes))
    return inventory, applier


def dra_node(name: str) -> dict[str, Any]:
    return make_node(name).obj()  # no nvidia.com/gpu allocatable


def t4_slice(node: str, count: int = 2) -> dict[str, Any]:
    return resource_slice(node, [gpu_device(f"gpu-{i}", "Tesla T4", f"GPU-{node}-{i}", "15Gi")
                                 for i in range(count)])


def a100_slice(node: str) -> dict[str, Any]:
    return resource_slice(node, [
        gpu_device("gpu-0", A100, "GPU-a", "80Gi", counter_set="cs-0"),
        gpu_device("gpu-1", A100, "GPU-b", "80Gi", counter_set="cs-1"),
        mig_device("gpu-0-mig-0", A100, "MIG-a0", "1g.10gb", "9856Mi", counter_set="cs-0")])


def busy(inventory: Inventory, node: str) -> list[int]:
    """Per GPU slot: pods (holdings) on it."""
    snapshot = inventory.snapshot()
    row = snapshot.node_index[node]
    return snapshot.pods[row][snapshot.gpu_type[row] >= 0].tolist()


def test_a_node_with_gpus_in_slices_and_none_allocatable_is_dra_managed(
        platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("t4-dra"))
    assert applier.dra is not None
    assert inventory.snapshot().nodes["t4-dra"].gpus == ()
    applier.dra.slice_event("ADDED", t4_slice("t4-dra"))
    info = inventory.snapshot().nodes["t4-dra"]
    assert info.dra and [g.dra_device for g in info.gpus] == ["gpu-0", "gpu-1"]
    assert [g.uuid for g in info.gpus] == ["GPU-t4-dra-0", "GPU-t4-dra-1"]
    assert bool(inventory.snapshot().node_dra[inventory.snapshot().node_index["t4-dra"]])
    applier.dra.slice_event("DELETED", t4_slice("t4-dra"))
    assert not inventory.snapshot().nodes["t4-dra"].dra


def test_a_device_plugin_node_stays_one_even_with_a_slice(platform: Platform) -> None:
    inventory, applier = setup(platform, l4_node("l4"))
    assert applier.dra is not None
    applier.dra.slice_event("ADDED", t4_slice("l4"))
    info = inventory.snapshot().nodes["l4"]
    assert not info.dra and platform.catalog.id_of(info.gpus[0].type_index) == "l4"


def test_slices_before_the_node_are_merged_when_the_node_comes(platform: Platform) -> None:
    inventory, applier = setup(platform)
    assert applier.dra is not None
    applier.dra.replace_slices([t4_slice("late")])
    applier.node_event("ADDED", dra_node("late"))
    assert inventory.snapshot().nodes["late"].dra


def test_allocated_claims_hold_their_devices_and_release_them(platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("a100"))
    assert applier.dra is not None
    applier.dra.replace_slices([a100_slice("a100")])
    # full gpu-1: the whole GPU; the MIG device of gpu-0 (counter set cs-0): 9856 MiB of GPU 0,
    # so the full gpu-0 is off the market too; admin access: nothing
    applier.dra.claim_event("ADDED", claim("whole", [result("a100", "gpu-1")]))
    applier.dra.claim_event("ADDED", claim("mig", [result("a100", "gpu-0-mig-0")]))
    applier.dra.claim_event("ADDED", claim("monitor", [result("a100", "gpu-0", admin=True)]))
    assert busy(inventory, "a100") == [1, 1]
    snapshot = inventory.snapshot()
    row = snapshot.node_index["a100"]
    assert snapshot.free_mib[row][:2].tolist() == [81920 - 9856, 0]
    a100 = platform.catalog.resolve_node_type("a100-80gb")
    assert a100 is not None
    request = platform.placement_request(GpuRequest(RequestKind.WHOLE, 1,
                                                    types=frozenset({a100})))
    assert fit(snapshot, request, np.array([row])).code[0] == Reason.GPUS_BUSY
    applier.dra.claim_event("DELETED", claim("whole", [result("a100", "gpu-1")]))
    applier.dra.replace_claims([])
    assert busy(inventory, "a100") == [0, 0]


def test_a_shared_device_holds_its_consumed_memory(platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("t4"))
    assert applier.dra is not None
    applier.dra.replace_slices([t4_slice("t4")])
    applier.dra.claim_event("ADDED", claim("s", [result("t4", "gpu-0", share_id="x",
                                                        memory="4Gi")]))
    snapshot = inventory.snapshot()
    # 15Gi - 4Gi = 15360 - 4096 = 11264 MiB
    assert snapshot.free_mib[snapshot.node_index["t4"]][0] == 11264


def test_a_claim_before_its_slice_is_held_once_the_devices_are_known(
        platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("t4"))
    assert applier.dra is not None
    applier.dra.claim_event("ADDED", claim("early", [result("t4", "gpu-1")]))
    applier.dra.slice_event("ADDED", t4_slice("t4"))
    assert busy(inventory, "t4") == [0, 1]


def test_pods_on_dra_nodes_hold_no_gpu_and_a_pod_relist_keeps_the_claims(
        platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("t4"))
    assert applier.dra is not None
    applier.dra.replace_slices([t4_slice("t4")])
    applier.dra.replace_classes([device_class()])
    assert applier.dra.state.extended_resources() == {"nvidia.com/gpu": "gpu.nvidia.com"}
    pod = make_pod("p").namespace("default").uid("uid-p").gpus(1).node_name("t4") \
        .phase("Running").obj()
    applier.pod_event("ADDED", pod)  # bound elsewhere, no annotation: nothing inferred
    assert busy(inventory, "t4") == [0, 0] and applier.inferred_total == 0
    applier.dra.claim_event("ADDED", claim("p-er", [result("t4", "gpu-0")], pod_uid="uid-p",
                                           extended=True))
    applier.replace_pods([pod])
    assert busy(inventory, "t4") == [1, 0]
    holding = inventory.holding("uid-p")
    assert holding is not None and holding.assignment is None


def test_a_claim_allocated_for_a_pod_replaces_the_gpu_prioritize_guessed(
        platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("t4"))
    assert applier.dra is not None
    applier.dra.replace_slices([t4_slice("t4")])
    key = PodKey("default", "p", "uid-p")
    # prioritize guessed GPU 1; DRA allocated gpu-0 in PreBind and reserved the claim for p
    inventory.assume(key, Assignment("t4", RequestKind.WHOLE, (GpuGrant(1, 15360, whole=True),)),
                     cpu_milli=500, ttl=30)
    applier.dra.claim_event("ADDED", claim("p-er", [result("t4", "gpu-0")], pod_uid="uid-p",
                                           extended=True))
    assert busy(inventory, "t4") == [1, 0] and inventory.conflicts_total == 0
    held = inventory.holding("uid-p")
    assert held is not None and held.assignment is not None and held.assignment.grants == ()
    assert held.cpu_milli == 500


def test_only_whole_gpus_are_placed_on_dra_nodes(platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("t4"))
    assert applier.dra is not None
    applier.dra.replace_slices([t4_slice("t4")])
    snapshot = inventory.snapshot()
    rows = np.array([snapshot.node_index["t4"]])
    whole = platform.placement_request(GpuRequest(RequestKind.WHOLE, 1))
    share = platform.placement_request(GpuRequest(RequestKind.VRAM, 1, vram_mib=4096))
    assert fit(snapshot, whole, rows).code[0] == Reason.FITS
    assert fit(snapshot, share, rows).code[0] == Reason.DRA_MANAGED
    oracle = reference()  # the naive per-node reference says the same
    assert oracle.fit_node(snapshot, share.request, int(rows[0])).code == Reason.DRA_MANAGED
    assert oracle.fit_node(snapshot, whole.request, int(rows[0])).code == Reason.FITS


def test_a_malformed_dra_object_is_counted_and_ignored(platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("t4"))
    assert applier.dra is not None
    bad = t4_slice("t4")
    bad["spec"]["devices"] = "all of them"
    applier.dra.slice_event("ADDED", bad)
    assert applier.dra.state.decode_failures == 1
    assert not inventory.snapshot().nodes["t4"].dra


def test_the_debug_inventory_inspect_and_metrics_show_dra_devices_and_claims(
        platform: Platform) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from extender.inventory.report import inventory_report
    from extender.server.metrics import InventoryCollector
    from extender.views.inspect import render_inventory

    inventory, applier = setup(platform, dra_node("a100"))
    assert applier.dra is not None
    applier.dra.replace_slices([a100_slice("a100")])
    applier.dra.claim_event("ADDED", claim("c", [result("a100", "gpu-1")]))
    node, = inventory_report(inventory)["nodes"]
    assert [g["draDevice"] for g in node["gpus"]] == ["gpu-0", "gpu-1"]
    assert {d["name"] for d in node["draDevices"]} == {"gpu-0", "gpu-1", "gpu-0-mig-0"}
    holding, = node["holdings"]
    assert holding["pod"] == "default/c (ResourceClaim)" and holding["gpus"][0]["index"] == 1
    text = render_inventory(inventory_report(inventory))
    assert "DRA" in text and "gpu-0-mig-0=GPU0(1g.10gb)" in text
    registry = CollectorRegistry()
    registry.register(InventoryCollector(inventory, dict))
    exposition = generate_latest(registry).decode()
    assert "gpu_extender_dra_nodes 1.0" in exposition
    assert 'gpu_extender_dra_gpus_allocated{modelName="a100-80gb"} 1.0' in exposition


def test_re_merging_a_node_says_each_dra_problem_once(platform: Platform) -> None:
    inventory, applier = setup(platform, dra_node("n"))
    assert applier.dra is not None
    odd = resource_slice("n", [gpu_device("gpu-0", "Banana GPU", "U0", "8Gi")])
    applier.dra.slice_event("ADDED", odd)
    applier.dra.slice_event("MODIFIED", resource_slice("n", [
        gpu_device("gpu-0", "Banana GPU", "U0", "8Gi"), gpu_device("gpu-1", "Tesla T4", "U1",
                                                                  "15Gi")]))
    applier.node_event("MODIFIED", dra_node("n"))
    problems = inventory.snapshot().nodes["n"].problems
    assert len(problems) == 1 and "Banana GPU" in problems[0]
