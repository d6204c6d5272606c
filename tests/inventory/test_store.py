"""Inventory examples: strict reservations and their messages, static MIG layouts per type,
copy-on-write snapshots, reservation lifecycle."""

from __future__ import annotations

import numpy as np
import pytest

from extender.core.fit import fit
from extender.errors import CapacityError, UnknownNodeError
from extender.inventory import Holding, HoldingState
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from tests.core.helpers import gpu, inventory, node, place, placement, request

KEY = PodKey("ns", "p", "p")


def mig_grant(profile: str, start: int, slices: int, memory: int = 9856,
              index: int = 0) -> Assignment:
    return Assignment("n", RequestKind.MIG, (GpuGrant(index, memory, mig_profile=profile,
                                                      mig_start=start, mig_slices=slices),))


REFUSALS = [
    pytest.param(node("n", "t4", 1), Assignment("n", RequestKind.VRAM, (GpuGrant(0, 16385),)),
                 "needs 16385 MiB VRAM, 16384 free",
                 id="16385 MiB on a 16384 MiB T4: 16385 > 16384"),
    pytest.param(node("n", "t4", 1), Assignment("n", RequestKind.WHOLE,
                                                (GpuGrant(3, 16384, whole=True),)),
                 "GPU 3 is not on node n", id="a GPU index the node does not have"),
    pytest.param(node("n", "t4", 2), Assignment("n", RequestKind.WHOLE, (
        GpuGrant(0, 16384, whole=True), GpuGrant(0, 16384, whole=True))),
                 "GPU 0 granted twice", id="the same GPU twice for a 2-GPU pod"),
    pytest.param(node("n", "t4", 1), Assignment("n", RequestKind.WHOLE,
                                                (GpuGrant(0, 8192, whole=True),)),
                 "must hold all 16384 MiB", id="a whole GPU that does not hold all its VRAM"),
    pytest.param(node("n", "t4", 1), Assignment("n", RequestKind.VRAM, (GpuGrant(0, 0),)),
                 "at least 1 MiB", id="a share of 0 MiB (it would fit beside a whole pod)"),
    pytest.param(node("n", "t4", 1, healthy=False), Assignment(
        "n", RequestKind.VRAM, (GpuGrant(0, 1024),)), "GPU is unhealthy",
                 id="any grant on an unhealthy GPU"),
    pytest.param(node("n", "l4", 1, replicas=2), Assignment(
        "n", RequestKind.WHOLE, (GpuGrant(0, 24576, whole=True),)), "time-sliced",
                 id="a whole grant on a time-sliced GPU (it hands out replicas)"),
    pytest.param(node("n", "t4", 1), Assignment("n", RequestKind.SHARED,
                                                (GpuGrant(0, 8192, replica=True),)),
                 "not time-sliced", id="a replica of a GPU without time slicing"),
    pytest.param(node("n", "a100-80gb", 1, mig="dynamic"), Assignment(
        "n", RequestKind.VRAM, (GpuGrant(0, 1024),)), "MIG-partitioned",
                 id="a VRAM share on a MIG-partitioned GPU"),
    pytest.param(node("n", "a100-80gb", 1, mig="dynamic"), mig_grant("3g.40gb", 2, 4, 40192),
                 "may not start at slot 2", id="a 3g.40gb at slot 2 (legal starts: 0, 4)"),
    pytest.param(node("n", "a100-80gb", 1, mig="dynamic"), mig_grant("1g.10gb", -1, 1),
                 "out of range", id="a MIG grant without a start slot"),
    pytest.param(node("n", "a100-80gb", 1, mig="dynamic"), mig_grant("1g.10gb", 0, 2),
                 "spans 1 slots, not 2", id="a 1g.10gb claiming 2 slots (it spans 1)"),
    pytest.param(node("n", "a100-80gb", 1, mig=(("3g.40gb", 0),)), mig_grant("1g.10gb", 4, 1),
                 "may not start at slot 4",
                 id="a static layout accepts only its own instances"),
    pytest.param(node("n", "t4", 1), mig_grant("1g.10gb", 0, 1),
                 "not possible on this GPU", id="a MIG grant on a GPU without MIG"),
]


@pytest.mark.parametrize(("info", "assignment", "message"), REFUSALS)
def test_reserve_refuses_and_changes_nothing(info: object, assignment: Assignment,
                                             message: str) -> None:
    inv = inventory(info)  # type: ignore[arg-type]
    before = inv.snapshot()
    with pytest.raises(CapacityError, match=message):
        inv.assume(KEY, assignment)
    assert inv.snapshot() is before and inv.holdings() == []


def test_two_mig_instances_may_not_overlap() -> None:
    inv = inventory(node("n", "a100-80gb", 1, mig="dynamic"))
    inv.assume(PodKey("ns", "a", "a"), mig_grant("3g.40gb", 4, 4, 40192))
    # 1g.10gb at 5 lies in slots 4..7 of the 3g.40gb
    with pytest.raises(CapacityError, match=r"slots 5..5 overlap"):
        inv.assume(PodKey("ns", "b", "b"), mig_grant("1g.10gb", 5, 1))


def test_reserve_on_an_unknown_node_raises_unknown_node() -> None:
    with pytest.raises(UnknownNodeError):
        inventory().assume(KEY, Assignment("ghost", RequestKind.WHOLE, ()))


def test_a_refused_replacement_keeps_the_old_reservation() -> None:
    inv = inventory(node("n", "t4", 1))
    inv.assume(KEY, Assignment("n", RequestKind.VRAM, (GpuGrant(0, 4096),)))
    with pytest.raises(CapacityError):
        inv.assume(KEY, Assignment("n", RequestKind.VRAM, (GpuGrant(0, 20000),)))
    holding = inv.holding("p")
    assert holding is not None and holding.assignment is not None
    assert holding.assignment.grants[0].vram_mib == 4096
    # replacing it with 16384 fits: the old 4096 is released first
    inv.assume(KEY, Assignment("n", RequestKind.VRAM, (GpuGrant(0, 16384),)))
    assert int(inv.snapshot().free_mib[0, 0]) == 0


def test_static_layouts_are_kept_per_type() -> None:
    # The same instance list means different things on different types: 1g.10gb may start at
    # slot 1 on an A100-80GB (1 slot, starts 0..6) but not on an A100-40GB (2 slots, starts
    # 0, 2, 4, 6). Interning the layout by instances alone let the 40GB inherit start 1.
    layout = (("1g.10gb", 1),)
    inv = inventory(node("big", "a100-80gb", 1, mig=layout),
                    node("small", "a100-40gb", 1, mig=layout))
    snap = inv.snapshot()
    req = placement(request("mig", 1, mig="1g.10gb", types=["a100"]))
    result = fit(snap, req, np.array([snap.node_index["big"], snap.node_index["small"]]))
    assert result.units[:, 0].tolist() == [1, 0]
    with pytest.raises(CapacityError, match="may not start at slot 1"):
        inv.assume(KEY, Assignment("small", RequestKind.MIG, (GpuGrant(
            0, 9856, mig_profile="1g.10gb", mig_start=1, mig_slices=2),)))


def test_snapshots_are_copy_on_write_and_versioned() -> None:
    inv = inventory(node("a", "t4", 1), node("b", "t4", 1))
    first = inv.snapshot()
    assert inv.snapshot() is first  # unchanged: the same object
    place(inv, request("vram", vram=4096), "b")
    second = inv.snapshot()
    assert second.generation > first.generation
    assert int(first.free_mib[1, 0]) == 16384 and int(second.free_mib[1, 0]) == 12288
    assert int(second.node_version[1]) == second.generation  # row b changed last
    assert int(second.node_version[0]) < second.generation  # row a did not
    with pytest.raises(ValueError, match="read-only"):
        first.free_mib[0, 0] = 1


def test_reservations_expire_unless_bound() -> None:
    now = [100.0]
    inv = inventory(node("n", "t4", 2), clock=lambda: now[0])
    a = Assignment("n", RequestKind.WHOLE, (GpuGrant(0, 16384, whole=True),))
    b = Assignment("n", RequestKind.WHOLE, (GpuGrant(1, 16384, whole=True),))
    inv.assume(PodKey("ns", "a", "a"), a, ttl=30)
    inv.assume(PodKey("ns", "b", "b"), b, ttl=30)
    inv.finish_binding("b")
    now[0] = 129.0
    assert inv.expire() == []
    now[0] = 130.0  # 100 + 30: due
    assert [k.uid for k in inv.expire()] == ["a"]
    held = inv.holding("b")
    assert held is not None and held.state is HoldingState.BOUND
    assert int(inv.snapshot().pods[0].sum()) == 1


def test_observed_state_is_recorded_even_when_it_overcommits() -> None:
    inv = inventory(node("n", "t4", 1))
    grant = Assignment("n", RequestKind.WHOLE, (GpuGrant(0, 16384, whole=True),))
    inv.observe(Holding(PodKey("ns", "a", "a"), "n", grant))
    report = inv.observe(Holding(PodKey("ns", "b", "b"), "n", grant))
    assert any("already in use" in c for c in report.conflicts)
    assert int(inv.snapshot().free_mib[0, 0]) == -16384
    assert inv.conflicts_total == len(report.conflicts) == 2  # in use; 16384 > 0 free
    assert not inv.forget("a")  # observed holdings are the API's to remove
    assert inv.remove_pod("a") and inv.remove_pod("b")
    assert int(inv.snapshot().free_mib[0, 0]) == 16384


def test_a_node_that_comes_back_gets_its_pods_holdings_again() -> None:
    info = node("n", "t4", 2)
    inv = inventory(info)
    place(inv, request("whole", 1), "n")
    inv.remove_node("n")
    assert "n" not in inv.snapshot().node_index
    inv.upsert_node(info)
    snap = inv.snapshot()
    assert int(snap.pods[snap.node_index["n"]].sum()) == 1


def test_a_node_wider_than_the_arrays_widens_them() -> None:
    inv = inventory(node("n", "t4", 2))
    inv.upsert_node(node("wide", gpus=[gpu("t4", i) for i in range(12)]))
    snap = inv.snapshot()
    assert snap.n_gpus == 12
    assert (snap.gpu_type[snap.node_index["n"], 2:] == -1).all()


def test_node_info_is_the_current_description() -> None:
    inv = inventory(node("a", count=2))
    generation = inv.generation
    assert inv.node_info("a") == node("a", count=2)
    assert inv.node_info("b") is None
    inv.upsert_node(node("a", count=4))  # replaced: the new description, at once
    info = inv.node_info("a")
    assert info is not None and len(info.gpus) == 4
    assert inv.remove_node("a") and inv.node_info("a") is None
    assert inv.generation > generation
