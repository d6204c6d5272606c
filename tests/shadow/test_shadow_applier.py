"""The shadow's judgement without an API server: node and pod events fed to its applier as
the watch would deliver them (pending first, then bound by another scheduler)."""

from __future__ import annotations

from typing import Any

from extender.inventory.store import Inventory
from extender.model import Assignment, GpuGrant, RequestKind
from extender.platform import Platform
from extender.shadow.ledger import ShadowLedger, render
from extender.shadow.record import Invariant, ShadowRecord
from extender.shadow.service import ShadowService
from tests.builders import make_node, make_pod


class NoApi:
    """The shadow never calls the API in these tests (no watch is started)."""


def shadow(platform: Platform) -> tuple[ShadowService, list[ShadowRecord]]:
    service = ShadowService(platform, NoApi())  # type: ignore[arg-type]
    records: list[ShadowRecord] = []
    original = service.applier._on_record  # the ledger's add

    def both(record: ShadowRecord) -> None:
        records.append(record)
        original(record)

    service.applier._on_record = both
    service.applier.replace_nodes([
        make_node("t4-0").gfd("Tesla-T4", count=1).allocatable(gpu=1).label("pool", "a").obj(),
        make_node("t4-1").gfd("Tesla-T4", count=1).allocatable(gpu=1).label("pool", "a").obj(),
        make_node("a100-0").gke("nvidia-a100-80gb", count=1).allocatable(gpu=1)
        .label("pool", "b").obj()])
    service.applier.replace_pods([])
    service.inventory.mark_synced()
    return service, records


def bind(service: ShadowService, pod: dict[str, Any], node: str) -> None:
    service.applier.pod_event("ADDED", pod)
    bound = {**pod, "spec": {**pod["spec"], "nodeName": node}}
    service.applier.pod_event("MODIFIED", bound)


def test_a_share_on_a_gpu_held_whole_is_a_violation_and_the_alternative_is_the_free_gpu(
        platform: Platform) -> None:
    service, records = shadow(platform)
    bind(service, make_pod("whole").uid("u1").gpus(1).node_selector("pool", "a").obj(), "t4-0")
    bind(service, make_pod("share").uid("u2").gpu_memory("8Gi").node_selector("pool", "a")
         .obj(), "t4-0")
    first, second = records
    assert first.violations == () and first.gpus == (0,)
    assert second.node == "t4-0" and second.gpus == ()
    assert [v.invariant for v in second.violations] == [Invariant.WHOLE_GPU_SHARED]
    # gpu-extender would have used t4-1's free GPU 0
    assert (second.would.node, second.would.gpus) == ("t4-1", (0,))
    assert not second.agrees


def test_vram_over_memory_untyped_on_protected_and_a_pod_judged_once(
        platform: Platform) -> None:
    service, records = shadow(platform)
    for i in range(3):  # 3 x 8 GiB on one 16 GiB T4: the third over-commits it
        bind(service, make_pod(f"s{i}").uid(f"s{i}").gpu_memory("8Gi").obj(), "t4-0")
    # an untyped pod (no type, and no selection that reaches only protected nodes) on the A100
    bind(service, make_pod("u").uid("u").gpus(1).obj(), "a100-0")
    kinds = [[v.invariant for v in r.violations] for r in records]
    assert kinds == [[], [], [Invariant.VRAM_OVER_MEMORY], [Invariant.PROTECTED_TYPE]]
    assert records[3].would.node == "t4-1", "gpu-extender would have used the free T4"
    # another event of an already judged pod is not judged again
    service.applier.pod_event("MODIFIED", {**make_pod("u").uid("u").gpus(1).obj(),
                                           "spec": {**make_pod("u").gpus(1).obj()["spec"],
                                                    "nodeName": "a100-0"}})
    assert len(records) == 4
    report = service.ledger.to_json()
    assert report["totals"] == {"judged": 4, "agree": 1, "differ": 3, "wouldWait": 0,
                                "withViolations": 2}
    assert report["violations"]["vram-over-memory"] == 1
    text = render(report)
    assert "vram-over-memory" in text and max(map(len, text.splitlines())) <= 100
    assert b'gpu_extender_shadow_violations_total{invariant="untyped-on-protected"} 1.0' in \
        service.ledger.exposition()


def test_pods_bound_by_the_extender_itself_are_not_judged(platform: Platform) -> None:
    service, records = shadow(platform)
    ours = Assignment("t4-0", RequestKind.WHOLE, (GpuGrant(0, 16384, whole=True),), "t4")
    bind(service, make_pod("ours").uid("o1").gpus(1).assigned(ours).obj(), "t4-0")
    assert records == []
    # ...but one whose annotation names another node than where it runs is
    bind(service, make_pod("moved").uid("o2").gpus(1).assigned(ours).obj(), "t4-1")
    assert [r.pod for r in records] == ["default/moved"]


def test_ledger_state_file_round_trips(tmp_path: Any, platform: Platform) -> None:
    ledger = ShadowLedger(state_file=str(tmp_path / "state.json"))
    ledger.save()
    assert (tmp_path / "state.json").read_bytes().startswith(b"{")
    assert Inventory  # the shadow builds its own inventory (imported for the type only)


def test_a_pod_whose_selection_reaches_only_protected_nodes_is_typed_not_a_violation(
        platform: Platform) -> None:
    # pool=b holds only the A100: the pod asked for it by its node selection (issue 9)
    service, records = shadow(platform)
    bind(service, make_pod("sel").uid("sel").gpus(1).node_selector("pool", "b").obj(), "a100-0")
    (record,) = records
    assert record.violations == ()
    assert record.would.node == "a100-0"
