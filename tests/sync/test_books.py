"""Issue 19, findings 2, 4 and 9: the watch-fed books hold against what a pod's owner writes.

Every test drives the real ``InventoryApplier`` as the watch and a relist do, with annotations a
pod's owner can write (``kubectl annotate``, or at creation), the webhook down.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from extender.inventory.store import Inventory
from extender.kube.annotations import encode_assignment
from extender.model import ANNOTATION_OBSERVED, Assignment, GpuGrant, RequestKind
from extender.platform import Platform
from extender.sync.apply import InventoryApplier
from tests.builders import make_pod
from tests.sync.clusters import t4_node

T4_MIB = 15360
SHARE_MIB = 12288  # a 12 GiB share: two never fit one 15 GiB T4


def setup(platform: Platform, gpus: int = 8) -> tuple[Inventory, InventoryApplier]:
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    applier.replace_nodes([t4_node("n1", gpus)])
    inventory.mark_synced()
    return inventory, applier


def share(index: int, mib: int = SHARE_MIB) -> Assignment:
    return Assignment("n1", RequestKind.VRAM, (GpuGrant(index, mib),), "t4")


def whole(*indices: int) -> Assignment:
    return Assignment("n1", RequestKind.WHOLE,
                      tuple(GpuGrant(i, T4_MIB, whole=True) for i in indices), "t4")


def share_pod(name: str, *, node: str = "n1", assigned: Assignment | str | None = None,
              observed: Assignment | str | None = None) -> dict[str, Any]:
    builder = make_pod(name).namespace("ml").uid(f"uid-{name}").gpu_memory("12Gi")
    if node:
        builder = builder.node_name(node).phase("Running")
    if assigned is not None:
        builder = builder.assigned(assigned)
    if observed is not None:
        text = observed if isinstance(observed, str) else encode_assignment(observed)
        builder = builder.annotation(ANNOTATION_OBSERVED, text)
    return builder.obj()


def free_mib(inventory: Inventory) -> list[int]:
    snapshot = inventory.snapshot()
    return snapshot.free_mib[snapshot.node_index["n1"]][:8].tolist()


# -- finding 4: the owner rewrites its own accounting -------------------------------------


def test_patching_assigned_observed_to_less_frees_nothing(platform: Platform) -> None:
    inventory, applier = setup(platform)
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(0)))
    assert free_mib(inventory)[0] == T4_MIB - SHARE_MIB  # 15360 - 12288 = 3072
    # the owner patches the agent's annotation to 1 MiB: the amounts differ, not counted
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(0), observed=share(0, 1)))
    assert free_mib(inventory)[0] == 3072
    # and patching `assigned` itself is a change after the first: ignored too
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(0, 1)))
    assert free_mib(inventory)[0] == 3072
    assert applier.untrusted_total == 2


def test_a_relist_keeps_the_first_assigned(platform: Platform) -> None:
    inventory, applier = setup(platform)
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(0)))
    applier.replace_pods([share_pod("p", assigned=share(0, 1))])
    assert free_mib(inventory)[0] == 3072


def test_the_agents_correction_moves_the_grant_to_another_device(platform: Platform) -> None:
    inventory, applier = setup(platform)
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(0)))
    # the kubelet gave GPU 2: same kind, same 12288 MiB, another device -> counted there
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(0), observed=share(2)))
    assert free_mib(inventory)[0] == T4_MIB and free_mib(inventory)[2] == 3072
    assert applier.untrusted_total == 0


def test_a_whole_gpu_correction_must_hold_the_whole_gpu(platform: Platform) -> None:
    inventory, applier = setup(platform)
    pod = make_pod("w").namespace("ml").uid("uid-w").gpus(1).node_name("n1").phase("Running")
    applier.pod_event("MODIFIED", pod.assigned(whole(0)).obj())
    cheat = Assignment("n1", RequestKind.WHOLE, (GpuGrant(3, 1, whole=True),), "t4")
    applier.pod_event("MODIFIED", pod.annotation(ANNOTATION_OBSERVED,
                                                 encode_assignment(cheat)).obj())
    assert free_mib(inventory)[0] == 0 and free_mib(inventory)[3] == T4_MIB  # 1 MiB: ignored
    moved = Assignment("n1", RequestKind.WHOLE, (GpuGrant(3, T4_MIB, whole=True),), "t4")
    applier.pod_event("MODIFIED", pod.annotation(ANNOTATION_OBSERVED,
                                                 encode_assignment(moved)).obj())
    assert free_mib(inventory)[0] == T4_MIB and free_mib(inventory)[3] == 0


def test_a_preset_assigned_observed_never_wins_over_the_binding(platform: Platform) -> None:
    inventory, applier = setup(platform)
    # created with the correction already set (a 1 GiB... here 12 GiB share claiming 4 T4s)
    applier.pod_event("ADDED", share_pod("p", node="", observed=whole(0, 1, 2, 3)))
    # the Binding sets the node and our assignment (GPU 5); the pre-set value is still there
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(5), observed=whole(0, 1, 2, 3)))
    free = free_mib(inventory)
    assert free[5] == 3072 and free[:4] == [T4_MIB] * 4


def test_a_preset_consistent_correction_is_ignored_too(platform: Platform) -> None:
    inventory, applier = setup(platform)
    applier.pod_event("ADDED", share_pod("p", node="", observed=share(3)))
    applier.pod_event("MODIFIED", share_pod("p", assigned=share(5), observed=share(3)))
    free = free_mib(inventory)
    assert free[5] == 3072 and free[3] == T4_MIB


def test_a_cpu_pod_created_bound_claiming_every_gpu_holds_none(platform: Platform) -> None:
    inventory, applier = setup(platform)
    cpu_pod = make_pod("cpu").namespace("ml").uid("uid-cpu").node_name("n1") \
        .phase("Running").assigned(whole(*range(8))).obj()
    applier.pod_event("ADDED", cpu_pod)
    applier.replace_pods([cpu_pod])
    assert free_mib(inventory) == [T4_MIB] * 8
    snapshot = inventory.snapshot()
    assert int(snapshot.pods[snapshot.node_index["n1"]].sum()) == 0


def test_an_assignment_that_is_not_the_request_is_inferred_instead(
        platform: Platform) -> None:
    inventory, applier = setup(platform)
    # a 12 GiB share pod whose `assigned` claims 4 whole T4s: the request wins (one share)
    applier.pod_event("ADDED", share_pod("p", assigned=whole(0, 1, 2, 3)))
    free = free_mib(inventory)
    assert sorted(free) == [3072] + [T4_MIB] * 7


def test_a_pod_whose_request_became_invalid_keeps_what_it_holds(platform: Platform) -> None:
    """Not a CPU pod: its request cannot be read (two amount forms), so nothing can be inferred
    for it, and the GPUs it runs on must not read free."""
    inventory, applier = setup(platform)
    pod = make_pod("p").namespace("ml").uid("uid-p").gpus(1).gpu_memory("4Gi") \
        .node_name("n1").phase("Running").assigned(whole(2)).obj()
    assert platform.pods.decode(pod).request is None
    applier.pod_event("ADDED", pod)
    assert free_mib(inventory)[2] == 0


# -- finding 2: one annotation value poisons the watch-fed inventory ----------------------

HUGE = orjson.dumps({"version": 1, "node": "n1", "kind": "vram", "type": "t4",
                     "gpus": [{"index": 0, "vramMiB": 99999999999}]}).decode()


def test_a_huge_value_is_a_problem_and_the_books_go_on(platform: Platform) -> None:
    inventory, applier = setup(platform)
    applier.pod_event("ADDED", share_pod("ok", assigned=share(1)))
    poison = make_pod("cpu").namespace("ml").uid("uid-cpu").node_name("n1") \
        .phase("Running").assigned(HUGE).obj()
    applier.pod_event("ADDED", poison)  # raised OverflowError before
    applier.replace_nodes([t4_node("n1", 8)])  # a node update re-applies every pod
    applier.node_event("MODIFIED", t4_node("n1", 8))
    assert free_mib(inventory)[1] == 3072, "the later pod is still counted"
    applier.replace_pods([share_pod("ok", assigned=share(1)), poison])  # a relist after a 410
    applier.pod_event("DELETED", poison)
    assert free_mib(inventory)[1] == 3072
    assert inventory.conflicts_total == 0


def test_one_unreadable_pod_never_stops_a_relist(platform: Platform) -> None:
    inventory, applier = setup(platform)
    broken = {"metadata": {"name": "x", "namespace": "ml", "uid": "uid-x"},
              "spec": {"nodeName": "n1"}, "status": ["x"]}  # AttributeError before
    deep: dict[str, Any] = {}
    for _ in range(300):
        deep = {"a": deep}
    nested = share_pod("deep") | {"extra": deep}
    repairs = applier.replace_pods([broken, nested, share_pod("ok", assigned=share(1))])
    assert free_mib(inventory)[1] == 3072
    assert repairs["pods_added"] >= 1
    applier.pod_event("MODIFIED", broken)
    applier.pod_event("MODIFIED", nested)


def test_one_unreadable_node_never_stops_a_relist(platform: Platform) -> None:
    inventory, applier = setup(platform)
    broken = {"metadata": {"name": "bad"}, "status": {"allocatable": ["x"]}}
    applier.replace_nodes([broken, t4_node("n1", 8), t4_node("n2", 2)])
    assert inventory.node_names() == ["n1", "n2"]
    applier.node_event("MODIFIED", broken)
    assert applier.bad_objects_total == 2


def test_the_arrays_never_see_an_out_of_range_grant(platform: Platform) -> None:
    """Validate, then apply: a holding with a grant no GPU has is not counted at all (not
    half-applied), whoever builds it."""
    from extender.inventory.store import Holding
    from extender.model import PodKey

    inventory, _ = setup(platform)
    bad = Assignment("n1", RequestKind.VRAM, (GpuGrant(0, 100), GpuGrant(1, 10**11)), "t4")
    report = inventory.observe(Holding(PodKey("ml", "p", "u"), "n1", bad))
    assert report.conflicts and free_mib(inventory) == [T4_MIB] * 8
    snapshot = inventory.snapshot()
    assert np.all(snapshot.pods[snapshot.node_index["n1"]] == 0)
