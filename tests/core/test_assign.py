"""Table-driven tests of ``core.assign``: which GPU(s), which MIG slots, with the arithmetic."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from extender.core.assign import NoFitError, assign, best_mig_start, taken_fraction
from extender.inventory.layout import span_mask
from extender.model import Assignment, GpuGrant, GpuRequest, NodeInfo, PodKey, RequestKind
from tests.core.helpers import (
    catalog,
    gpu,
    inventory,
    node,
    place,
    placement,
    reference,
    request,
    t,
)


@dataclass
class Case:
    nodes: list[NodeInfo]
    req: GpuRequest
    indices: list[int]
    """GPU indices of the grants, in grant order."""
    before: list[tuple[GpuRequest, str]] = field(default_factory=list)
    starts: list[int] | None = None
    """MIG start slot of each grant."""
    order: list[int] | None = None
    namespace: str = "platform"


def vram(mib: int) -> GpuRequest:
    return request("vram", vram=mib)


A100 = ("a100-80gb",)

CASES = [
    pytest.param(Case([node("n", "t4", 4)], request("whole", 2), [0, 1]),
                 id="two whole GPUs on an idle 4-GPU node: the lowest indices 0 and 1"),
    pytest.param(Case([node("n", "t4", 4)], request("whole", 2), [2, 3],
                      before=[(request("whole", 2), "n")]),
                 id="with 0 and 1 taken the next two whole GPUs are 2 and 3"),
    pytest.param(Case([node("n", "t4", 3)], vram(5000), [0],
                      before=[(vram(10000), "n"), (vram(12288), "n")]),
                 # the first share lands on GPU 0 (all idle: lowest), the second on GPU 1
                 # (GPU 0 has 6384 < 12288, so the least free that covers it is an idle one).
                 # Now free: GPU0 6384, GPU1 4096, GPU2 16384. 5000 MiB: GPU1 4096 < 5000;
                 # GPU0 6384 is the least free VRAM that still covers it.
                 id="a VRAM share goes to the GPU with the least free VRAM that covers it"),
    pytest.param(Case([node("n", gpus=[gpu("t4", 0), gpu("l40s", 1)])], vram(4096), [0],
                      before=[(vram(12288), "n"), (vram(41000), "n")]),
                 # free: T4 16384-12288 = 4096 MiB (0.25), L40S 49152-41000 = 8152 MiB (0.166)
                 # best fit by VRAM: 4096 < 8152 -> the T4, although its free fraction is
                 # larger
                 id="VRAM best fit compares MiB, not fractions: 4096 MiB on a T4 beats 8152"),
    pytest.param(Case([node("n", gpus=[gpu("t4", 0), gpu("l40s", 1)])],
                      request("fraction", milli=100), [1],
                      before=[(vram(12288), "n"), (vram(41000), "n")]),
                 # free thousandths: T4 4096*1000//16384 = 250, L40S 8152*1000//49152 = 165
                 # a 0.1 share goes to the least free share: the L40S (165 < 250)
                 id="fraction best fit compares free thousandths: 165 on the L40S beats 250"),
    pytest.param(Case([node("n", gpus=[gpu("t4", 0), gpu("l4", 1, replicas=2)])],
                      request("whole", 1), [1]),
                 # time-sliced GPUs first, so plain GPUs stay whole
                 id="a whole-GPU pod takes a replica of a time-sliced GPU before a plain GPU"),
    pytest.param(Case([node("n", gpus=[gpu("l4", 0, replicas=4, shared=True),
                                       gpu("l4", 1, replicas=4, shared=True)])],
                      request("shared", 1), [0],
                      before=[(request("shared", 1), "n")] * 2),
                 # pod 1: both have 4 free, lowest index -> GPU 0 (3 free); pod 2: 3 < 4 ->
                 # GPU 0 again (2 free). Next: 2 free < 4 free -> GPU 0: replicas pack
                 id="replicas pack onto the GPU with the fewest free: 2 of 4 left beats 4"),
    pytest.param(Case([node("n", gpus=[gpu("l4", 0, replicas=4, shared=True),
                                       gpu("l4", 1, replicas=4, shared=True)])],
                      request("shared", 2), [0, 1],
                      before=[(request("shared", 1), "n")] * 3),
                 id="two replicas need two distinct GPUs even when one has 1 free and one 4"),
    pytest.param(Case([node("n", "a100-80gb", 1, mig="dynamic")],
                      request("mig", 7, mig="1g.10gb", types=A100), [0] * 7,
                      starts=[6, 5, 4, 3, 2, 1, 0]),
                 # on an idle GPU every start breaks the 7g.80gb and one 3g/4g half equally:
                 # ties go to the highest start, so small instances pack from the top
                 id="seven 1g.10gb fill an A100-80GB from the top: slots 6, 5, ..., 0"),
    pytest.param(Case([node("n", "a100-80gb", 2, mig="dynamic")],
                      request("mig", 2, mig="3g.40gb", types=A100), [0, 1], starts=[0, 4],
                      before=[(request("mig", 1, mig="1g.10gb", types=A100), "n")]),
                 # the earlier 1g.10gb sits on GPU 0 at slot 6. Fullest GPU first: GPU 0 takes
                 # the first 3g.40gb at start 0 (start 4 = slots 4..7 overlaps slot 6); GPU 1
                 # then takes the second at 4, keeping start 0 free for a 4g.40gb
                 id="two 3g.40gb: the fullest A100 first, then start 4 keeps a 4g placeable"),
    pytest.param(Case([node("n", "a100-80gb", 1, mig=(("3g.40gb", 4), ("1g.10gb", 0),
                                                      ("1g.10gb", 1)))],
                      request("mig", 1, mig="1g.10gb", types=A100), [0], starts=[1]),
                 # a static layout offers exactly its instances: 0 and 1; the tie on quality
                 # goes to the higher start
                 id="a static layout uses only its own instances: 1g.10gb at 1 or 0 -> 1"),
    pytest.param(Case([node("n", "t4", 4)], request("whole", 2), [3, 1], order=[3, 1]),
                 id="a strategy's order wins over the default rules: slots 3 then 1"),
    pytest.param(Case([node("n", "t4", 4)], vram(1024), [2], order=[2]),
                 id="a strategy's choice for a share is used as is"),
]


@pytest.mark.parametrize("case", CASES)
def test_assign(case: Case) -> None:
    inv = inventory(*case.nodes)
    for req, name in case.before:
        place(inv, req, name)
    snap = inv.snapshot()
    row = snap.node_index["n"]
    got = assign(snap, placement(case.req, case.namespace), row, order=case.order)
    assert [g.index for g in got.grants] == case.indices
    if case.starts is not None:
        assert [g.mig_start for g in got.grants] == case.starts
    want = reference().assign(snap, case.req, row, namespace=case.namespace, order=case.order)
    assert got == want
    inv.assume(PodKey("ns", "p", "p"), got)  # and the inventory accepts it


def test_best_mig_start_keeps_a_3g_40gb_placeable() -> None:
    # A 1g.10gb already at slot 0. The highest free start, 6, would break both 3g.40gb
    # starts (0 is broken by slot 0, 4 would be by slot 6). Start 1 keeps slots 4..7 free:
    # 3g.40gb at 4 stays placeable, so 1 wins despite the tie rule preferring high starts.
    used = span_mask(0, 1)
    a100 = t("a100-80gb")
    free_starts = 0b0111_1110  # 1..6 free for a 1-slot profile
    assert best_mig_start(catalog(), a100, used, free_starts, 1) == 1
    assert reference().best_mig_start(a100, frozenset({0}), [1, 2, 3, 4, 5, 6], 1) == 1


def test_after_a_1g_at_slot_0_the_core_packs_the_next_at_slot_1() -> None:
    inv = inventory(node("n", "a100-80gb", 1, mig="dynamic"))
    first = Assignment("n", RequestKind.MIG, (GpuGrant(0, 9856, mig_profile="1g.10gb",
                                                       mig_start=0, mig_slices=1),))
    inv.assume(PodKey("ns", "first", "first"), first)
    second = place(inv, request("mig", 1, mig="1g.10gb", types=A100), "n")
    assert second.grants[0].mig_start == 1
    third = place(inv, request("mig", 1, mig="3g.40gb", types=A100), "n")
    assert third.grants[0].mig_start == 4  # slots 4..7, still free


def test_assign_refuses_a_node_where_the_pod_does_not_fit() -> None:
    inv = inventory(node("n", "t4", 1))
    place(inv, request("whole", 1), "n")
    snap = inv.snapshot()
    with pytest.raises(NoFitError, match="1/1 accepted GPUs in use"):
        assign(snap, placement(request("whole", 1)), snap.node_index["n"])


def test_grants_carry_uuid_type_and_generation() -> None:
    inv = inventory(node("n", "l4", 2))
    snap = inv.snapshot()
    got = assign(snap, placement(request("whole", 2)), snap.node_index["n"])
    assert got.node == "n" and got.kind is RequestKind.WHOLE and got.type_id == "l4"
    assert got.generation == snap.generation
    assert [g.uuid for g in got.grants] == ["GPU-l4-0", "GPU-l4-1"]
    assert all(g.whole and g.vram_mib == 24576 for g in got.grants)


def test_taken_fraction_adds_what_each_grant_takes() -> None:
    # whole T4 = 1; a 4096 MiB share of a 16384 MiB T4 = 4096/16384 = 0.25; a replica of a
    # 4-way sliced L4 = 1/4; a 3g.40gb spans 4 of an A100's 8 slots = 0.5
    inv = inventory(node("n", gpus=[gpu("t4", 0), gpu("t4", 1), gpu("l4", 2, replicas=4),
                                    gpu("a100-80gb", 3, mig="dynamic")]))
    snap = inv.snapshot()
    row = snap.node_index["n"]
    grants = [GpuGrant(0, 16384, whole=True), GpuGrant(1, 4096),
              GpuGrant(2, 6144, replica=True),
              GpuGrant(3, 40192, mig_profile="3g.40gb", mig_start=0, mig_slices=4)]
    assert taken_fraction(snap, row, grants) == pytest.approx(1 + 0.25 + 0.25 + 0.5)


def test_a_grant_on_a_gpu_the_node_no_longer_reports_takes_nothing() -> None:
    # the node reports GPU 0 only (say its device plugin has not registered the others yet);
    # a pod's annotation still names GPU 1: 1 (GPU 0, whole) + 0 (GPU 1: not there)
    snap = inventory(node("n", gpus=[gpu("t4", 0)])).snapshot()
    grants = [GpuGrant(0, 16384, whole=True), GpuGrant(1, 16384, whole=True)]
    assert taken_fraction(snap, snap.node_index["n"], grants) == pytest.approx(1.0)
