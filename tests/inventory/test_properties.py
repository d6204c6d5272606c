"""Property tests of the inventory: random sequences of node and pod operations, and after every
step the per-GPU invariants, recomputed from scratch from the holdings.

Invariants checked after every step:

- per GPU: reserved VRAM <= total, time-slice replicas used <= replicas;
- MIG instances never overlap, start only at legal slots of the GPU's layout, stay inside the
  type's real slots, and ``mig_used`` is exactly the phantom slots plus their spans;
- a whole GPU is never shared (its holder is the only pod on it);
- every array equals a recomputation from the nodes and holdings (free VRAM, pods, replicas,
  MIG slots, node CPU/memory);
- snapshots taken earlier never change (copy-on-write), and the generation strictly increases
  whenever the arrays change.

Invalid grants built on purpose must raise ``CapacityError`` and change nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from extender.core.assign import assign
from extender.core.fit import fit
from extender.core.fragmentation.model import FragModel, _gpu_state_rows, gpu_state
from extender.core.scoring.capacity import _used_rows, used_fraction
from extender.core.workload import Shape
from extender.errors import CapacityError, UnknownNodeError
from extender.inventory import ClusterSnapshot, Holding, HoldingState, Inventory
from extender.inventory.store import AlreadyHeldError
from extender.model import Assignment, GpuGrant, GpuRequest, NodeInfo, PodKey, RequestKind
from tests.clock import FakeClock
from tests.core.helpers import catalog, placement, random_node, random_request

ARRAYS = ("node_valid", "node_version", "cpu_free", "memory_free", "gpu_type", "gpu_index",
          "total_mib", "free_mib", "replicas", "replicas_free", "mig_layout", "mig_used",
          "healthy", "pods")
NAMES = tuple(f"n{i}" for i in range(6))
MODEL = FragModel(catalog(), {Shape(1, 500, 0, 2000): 0.4, Shape(2, 1000, 0, 0): 0.3,
                              Shape(1, 0, 20000, 0): 0.2, Shape(0, 0, 0, 1000): 0.1})
STATELESS = (0, 2, 5, 6, 7)
"""Kinds of invalid grant that stay invalid whatever else the node holds."""


def frozen_copy(snap: ClusterSnapshot) -> dict[str, Any]:
    return {name: np.array(getattr(snap, name), copy=True) for name in ARRAYS} | {
        "names": tuple(snap.node_names), "layouts": np.array(snap.layouts, copy=True)}


def same_state(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["names"] == b["names"] and all(
        a[name].shape == b[name].shape and np.array_equal(a[name], b[name]) for name in ARRAYS)


class InventoryMachine(RuleBasedStateMachine):
    uids = Bundle("uids")

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.inv = Inventory(catalog(), clock=self.clock)
        self.specs: dict[str, NodeInfo] = {}
        """Last spec upserted per name (also for removed nodes whose pods still hold)."""
        self.kept: list[tuple[ClusterSnapshot, dict[str, Any]]] = []
        self.last = frozen_copy(self.inv.snapshot())
        self.last_generation = self.inv.snapshot().generation
        self.counter = 0

    # -- helpers -------------------------------------------------------------------------

    def _rng(self, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)

    def _holders(self, name: str) -> list[Holding]:
        return [h for h in self.inv.holdings() if h.node == name]

    def _new_uid(self) -> str:
        self.counter += 1
        return f"pod-{self.counter}"

    def _valid_assignment(self, seed: int) -> tuple[Assignment, int] | None:
        """A placement the core makes on a random live node, or None if nothing fits."""
        rng = self._rng(seed)
        snap = self.inv.snapshot()
        live = [n for n in NAMES if n in snap.node_index]
        if not live:
            return None
        name = live[int(rng.integers(len(live)))]
        row = snap.node_index[name]
        for _ in range(8):
            req = request_for(snap, row, rng)
            preq = placement(req, "platform")
            if fit(snap, preq, np.array([row], dtype=np.int64)).fits[0]:
                return assign(snap, preq, row), int(rng.integers(0, 8)) * 1000
        return None

    # -- nodes -----------------------------------------------------------------------------

    @initialize(seed=st.integers(0, 2**32 - 1))
    def start_with_nodes(self, seed: int) -> None:
        rng = self._rng(seed)
        for name in NAMES[:3]:
            self._upsert(random_node(rng, name))

    def _upsert(self, info: NodeInfo) -> None:
        report = self.inv.upsert_node(info)
        assert report.conflicts == []
        self.specs[info.name] = info

    @rule(seed=st.integers(0, 2**32 - 1), index=st.integers(0, len(NAMES) - 1))
    def upsert_node(self, seed: int, index: int) -> None:
        """A new node, or new GPUs for a node nobody holds; a node with holders only changes
        in ways that keep them valid (CPU, memory, health)."""
        rng = self._rng(seed)
        name = NAMES[index]
        spec = self.specs.get(name)
        if spec is not None and self._holders(name):
            gpus = tuple(replace(g, healthy=bool(rng.random() > 0.3)) for g in spec.gpus)
            info = replace(spec, gpus=gpus, cpu_milli=spec.cpu_milli + 1000)
        else:
            info = random_node(rng, name)
        self._upsert(info)

    @rule(index=st.integers(0, len(NAMES) - 1))
    def remove_node(self, index: int) -> None:
        name = NAMES[index]
        known = name in self.inv.snapshot().node_index
        assert self.inv.remove_node(name) is known
        assert name not in self.inv.snapshot().node_index

    @rule(index=st.integers(0, len(NAMES) - 1))
    def node_comes_back(self, index: int) -> None:
        """A removed node returns with the same GPUs: its pods' holdings apply again."""
        name = NAMES[index]
        spec = self.specs.get(name)
        if spec is not None and name not in self.inv.snapshot().node_index:
            self._upsert(spec)

    # -- pods ------------------------------------------------------------------------------

    @rule(target=uids, seed=st.integers(0, 2**32 - 1), ttl=st.sampled_from([None, 5.0, 60.0]))
    def assume(self, seed: int, ttl: float | None) -> str:
        made = self._valid_assignment(seed)
        uid = self._new_uid()
        if made is None:
            return uid
        assignment, cpu = made
        self.inv.assume(PodKey("ns", uid, uid), assignment, cpu_milli=cpu, ttl=ttl)
        holding = self.inv.holding(uid)
        assert holding is not None and holding.state is HoldingState.ASSUMED
        return uid

    @rule(seed=st.integers(0, 2**32 - 1))
    def fill_a_node(self, seed: int) -> None:
        """The same request again and again on one node until it no longer fits: packs GPUs
        to their limits (last replica, last MIG slot, last MiB)."""
        rng = self._rng(seed)
        snap = self.inv.snapshot()
        live = [n for n in NAMES if n in snap.node_index]
        if not live:
            return
        name = live[int(rng.integers(len(live)))]
        req = request_for(snap, snap.node_index[name], rng)
        preq = placement(req, "platform")
        for _ in range(12):
            snap = self.inv.snapshot()
            row = snap.node_index[name]
            if not fit(snap, preq, np.array([row], dtype=np.int64)).fits[0]:
                break
            uid = self._new_uid()
            self.inv.assume(PodKey("ns", uid, uid), assign(snap, preq, row))

    @rule(target=uids, seed=st.integers(0, 2**32 - 1))
    def observe_new_pod(self, seed: int) -> str:
        made = self._valid_assignment(seed)
        uid = self._new_uid()
        if made is not None:
            assignment, cpu = made
            report = self.inv.observe(Holding(PodKey("ns", uid, uid), assignment.node,
                                              assignment, cpu_milli=cpu))
            assert report.conflicts == []
        return uid

    @rule(uid=uids, seed=st.integers(0, 2**32 - 1))
    def reserve_again(self, uid: str, seed: int) -> None:
        """A pod reserved again replaces its earlier reservation (or is refused intact)."""
        current = self.inv.holding(uid)
        if current is None:
            return
        made = self._valid_assignment(seed)
        if current.state is not HoldingState.ASSUMED:
            # the API's holding: no verb replaces it (a retried cycle of a bound pod)
            if made is not None:
                with pytest.raises(AlreadyHeldError):
                    self.inv.assume(current.key, made[0], cpu_milli=made[1], ttl=1.0)
            assert self.inv.holding(uid) == current
            return
        if made is None:
            return
        assignment, cpu = made
        # the core placed it without releasing the old one first, so it always fits
        self.inv.assume(current.key, assignment, cpu_milli=cpu)
        holding = self.inv.holding(uid)
        assert holding is not None and holding.assignment == assignment

    @rule(seed=st.integers(0, 2**32 - 1), how=st.integers(0, 9), uid=st.one_of(
        st.none(), uids))
    def reserve_invalid(self, seed: int, how: int, uid: str | None) -> None:
        """A grant that breaks an invariant must raise and change nothing (also when it would
        replace a pod's existing reservation)."""
        rng = self._rng(seed)
        snap = self.inv.snapshot()
        before = frozen_copy(snap)
        holdings_before = {h.key.uid: h for h in self.inv.holdings()}
        live = [n for n in NAMES if n in snap.node_index]
        if not live:
            with pytest.raises(UnknownNodeError):
                self.inv.assume(PodKey("ns", "x", "x"),
                                 Assignment("n0", RequestKind.WHOLE, (GpuGrant(0, 1),)))
            return
        # aim the replica and MIG-overlap cases at nodes where they can happen
        aimed = [n for n in live if (how == 4 and exhausted_slots(snap, n))
                 or (how >= 8 and (snap.mig_layout[snap.node_index[n]] >= 0).any())]
        pool = aimed or live
        name = pool[int(rng.integers(len(pool)))]
        assignment = invalid_assignment(snap, name, how, rng)
        if assignment is None:
            return
        key = PodKey("ns", "bad", "bad")
        if uid is not None and how in STATELESS:
            # replacing a pod's reservation: releasing it first must not make this valid
            key = PodKey("ns", uid, uid)
        with pytest.raises(CapacityError):
            self.inv.assume(key, assignment)
        after = self.inv.snapshot()
        assert after is snap and after.generation == snap.generation
        assert same_state(frozen_copy(after), before)
        assert {h.key.uid: h for h in self.inv.holdings()} == holdings_before

    @rule(uid=uids)
    def finish_binding(self, uid: str) -> None:
        before = self.inv.holding(uid)
        self.inv.finish_binding(uid)
        after = self.inv.holding(uid)
        if before is not None and before.state is HoldingState.ASSUMED:
            assert after is not None and after.state is HoldingState.BOUND
            assert after.expires_at is None
        else:
            assert after == before

    @rule(uid=uids)
    def unanswered_bind(self, uid: str) -> None:
        """A bind with no answer gives an assumed hold its TTL back (a state flip)."""
        before = self.inv.holding(uid)
        flipped = self.inv.unpin(uid, 5.0)
        after = self.inv.holding(uid)
        assert flipped is (before is not None and before.state is HoldingState.ASSUMED)
        if flipped:
            assert before is not None and after is not None
            assert after.expires_at == self.clock.now + 5.0
            assert after.assignment == before.assignment
        else:
            assert after == before

    @invariant()
    def tentative_holds_are_the_assumed_ones_with_a_ttl(self) -> None:
        expected = {h.key.uid for h in self.inv.holdings()
                    if h.state is HoldingState.ASSUMED and h.expires_at is not None}
        assert {h.key.uid for h in self.inv.tentative_holds()} == expected

    @rule(uid=uids)
    def watch_confirms(self, uid: str) -> None:
        """The API shows the pod with the grants we reserved: it becomes OBSERVED."""
        current = self.inv.holding(uid)
        if current is None:
            return
        self.inv.observe(replace(current, state=HoldingState.OBSERVED, expires_at=None))
        after = self.inv.holding(uid)
        assert after is not None and after.state is HoldingState.OBSERVED

    @rule(uid=uids)
    def forget(self, uid: str) -> None:
        current = self.inv.holding(uid)
        released = self.inv.forget(uid)
        # only an ASSUMED hold is the verbs' to drop: BOUND and OBSERVED are the API's
        expected = current is not None and current.state is HoldingState.ASSUMED
        assert released is expected
        if expected:
            assert self.inv.holding(uid) is None
        else:
            assert self.inv.holding(uid) == current

    @rule(uid=consumes(uids))
    def remove_pod(self, uid: str) -> None:
        known = self.inv.holding(uid) is not None
        assert self.inv.remove_pod(uid) is known
        assert self.inv.holding(uid) is None

    @rule(seconds=st.sampled_from([1.0, 10.0, 100.0]))
    def time_passes_and_reservations_expire(self, seconds: float) -> None:
        self.clock.now += seconds
        due = {h.key.uid for h in self.inv.holdings()
               if h.state is HoldingState.ASSUMED and h.expires_at is not None
               and h.expires_at <= self.clock.now}
        expired = self.inv.expire()
        assert {k.uid for k in expired} == due
        assert all(self.inv.holding(uid) is None for uid in due)

    @rule()
    def take_snapshot(self) -> None:
        snap = self.inv.snapshot()
        assert self.inv.snapshot() is snap  # the same object until the next change
        if len(self.kept) < 12:
            self.kept.append((snap, frozen_copy(snap)))

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def generation_increases_on_every_change(self) -> None:
        snap = self.inv.snapshot()
        now = frozen_copy(snap)
        assert snap.generation >= self.last_generation
        if not same_state(now, self.last):
            assert snap.generation > self.last_generation
        self.last, self.last_generation = now, snap.generation

    @invariant()
    def earlier_snapshots_never_change(self) -> None:
        for snap, copy in self.kept:
            assert same_state(frozen_copy(snap), copy)
            assert not snap.free_mib.flags.writeable

    @invariant()
    def arrays_equal_a_recomputation_from_the_holdings(self) -> None:
        check_against_holdings(self.inv)

    @invariant()
    def row_caches_equal_a_fresh_computation(self) -> None:
        """The per-row caches the kernels keep across snapshots (refreshed by node_version)
        hold what a computation from scratch gives, after any sequence of changes."""
        snap = self.inv.snapshot()
        rows = np.arange(snap.n_nodes, dtype=np.int64)
        cached = gpu_state(snap, rows)
        fresh = _gpu_state_rows(snap, rows)
        assert np.array_equal(cached.x, fresh.x)
        assert np.array_equal(cached.type_col, fresh.type_col)
        assert np.array_equal(cached.in_model, fresh.in_model)
        level, frag = MODEL.node_frag_cached(snap, rows)
        assert np.array_equal(level, MODEL.levels(snap.cpu_free))
        np.testing.assert_allclose(frag, MODEL.node_frag(fresh, level), atol=1e-9)
        used, _, _ = _used_rows(snap, rows)
        np.testing.assert_array_equal(used_fraction(snap, rows), used)


def exhausted_slots(snap: ClusterSnapshot, name: str) -> list[int]:
    """Time-sliced GPUs of the node with no replica left."""
    row = snap.node_index[name]
    return [s for s in range(snap.n_gpus)
            if snap.replicas[row, s] > 0 and snap.replicas_free[row, s] == 0]


def request_for(snap: ClusterSnapshot, row: int, rng: np.random.Generator) -> GpuRequest:
    """A request shaped for one random GPU of the node (so that it often fits)."""
    slots = [s for s in range(snap.n_gpus) if snap.gpu_type[row, s] >= 0]
    if not slots or rng.random() < 0.2:
        req, _, _ = random_request(rng)
        return GpuRequest(kind=req.kind, count=req.count, vram_mib=req.vram_mib,
                          milli=req.milli, mig_profile=req.mig_profile)
    slot = slots[int(rng.integers(len(slots)))]
    count = int(rng.choice([1, 1, 1, 2]))
    type_index = int(snap.gpu_type[row, slot])
    mig = catalog().types[type_index].mig if type_index < len(catalog()) else None
    if int(snap.mig_layout[row, slot]) >= 0 and mig is not None:
        profile = mig.profiles[int(rng.integers(len(mig.profiles)))]
        return GpuRequest(kind=RequestKind.MIG, count=count, mig_profile=profile.name)
    if int(snap.replicas[row, slot]) > 0 and rng.random() < 0.6:
        return GpuRequest(kind=RequestKind.SHARED, count=count)
    kind = RequestKind(str(rng.choice(["whole", "vram", "fraction"])))
    total = int(snap.total_mib[row, slot])
    return GpuRequest(kind=kind, count=count if kind is RequestKind.WHOLE else 1,
                      vram_mib=int(rng.integers(1, max(2, total // 2))),
                      milli=int(rng.integers(1, 1000)))


def invalid_assignment(snap: ClusterSnapshot, name: str, how: int,
                       rng: np.random.Generator) -> Assignment | None:
    """An assignment on ``name`` that breaks a per-GPU invariant in the current state."""
    row = snap.node_index[name]
    slots = [s for s in range(snap.n_gpus) if snap.gpu_type[row, s] >= 0]
    if not slots:
        return Assignment(name, RequestKind.WHOLE, (GpuGrant(0, 1024, whole=True),))
    slot = slots[int(rng.integers(len(slots)))]
    exhausted = exhausted_slots(snap, name)
    partitioned = [s for s in slots if snap.mig_layout[row, s] >= 0]
    if how == 4 and exhausted:
        slot = exhausted[int(rng.integers(len(exhausted)))]  # aim at the replica check
    elif how >= 8 and partitioned:
        slot = partitioned[int(rng.integers(len(partitioned)))]
    index = int(snap.gpu_index[row, slot])
    total = int(snap.total_mib[row, slot])
    free = int(snap.free_mib[row, slot])
    layout = int(snap.mig_layout[row, slot])
    cat = catalog()
    type_index = int(snap.gpu_type[row, slot])
    if how == 0:  # a GPU the node does not have
        return Assignment(name, RequestKind.WHOLE, (GpuGrant(999, total, whole=True),))
    if how == 1:  # more VRAM than is free
        return Assignment(name, RequestKind.VRAM, (GpuGrant(index, max(free, 0) + 1),))
    if how == 2:  # the same GPU twice for a multi-GPU pod
        grant = GpuGrant(index, total, whole=True)
        return Assignment(name, RequestKind.WHOLE, (grant, grant))
    if how == 3:  # a whole GPU that is in use, sliced, partitioned or unhealthy
        busy = int(snap.pods[row, slot]) > 0 or free != total or layout >= 0 or \
            int(snap.replicas[row, slot]) > 0 or not bool(snap.healthy[row, slot])
        return Assignment(name, RequestKind.WHOLE, (GpuGrant(index, total, whole=True),)) \
            if busy else Assignment(name, RequestKind.WHOLE, (GpuGrant(index, total - 1,
                                                                       whole=True),))
    if how == 4:  # a replica where there is none left (or no time slicing)
        if int(snap.replicas[row, slot]) > 1 and int(snap.replicas_free[row, slot]) > 0 and \
                layout < 0 and bool(snap.healthy[row, slot]) and free >= 1:
            return None
        return Assignment(name, RequestKind.SHARED, (GpuGrant(index, 1, replica=True),))
    if how == 5:  # a share of 0 MiB (would fit even on a GPU held whole)
        return Assignment(name, RequestKind.VRAM, (GpuGrant(index, 0),))
    mig = cat.types[type_index].mig if type_index < len(cat) else None
    if mig is None or layout < 0:
        profile = "1g.10gb"
        return Assignment(name, RequestKind.MIG, (GpuGrant(index, 1, mig_profile=profile,
                                                           mig_start=0, mig_slices=1),))
    profile = mig.profiles[int(rng.integers(len(mig.profiles)))]
    used = int(snap.mig_used[row, slot])
    if how == 6:  # an illegal start for the profile
        illegal = [s for s in range(-1, 9) if s not in profile.starts]
        start = illegal[int(rng.integers(len(illegal)))]
        return Assignment(name, RequestKind.MIG, (GpuGrant(
            index, profile.memory_mib, mig_profile=profile.name, mig_start=start,
            mig_slices=profile.slices),))
    if how == 7:  # a span of the wrong size
        return Assignment(name, RequestKind.MIG, (GpuGrant(
            index, profile.memory_mib, mig_profile=profile.name, mig_start=profile.starts[0],
            mig_slices=profile.slices + 1),))
    # overlapping an instance in use: a legal start whose span touches a used real slot
    real = (1 << mig.slots) - 1
    overlapping = [s for s in profile.starts
                   if used & real & (((1 << profile.slices) - 1) << s)]
    if not overlapping:
        return None
    start = overlapping[int(rng.integers(len(overlapping)))]
    grants = (GpuGrant(index, profile.memory_mib, mig_profile=profile.name, mig_start=start,
                       mig_slices=profile.slices),)
    return Assignment(name, RequestKind.MIG, grants)


def check_against_holdings(inv: Inventory) -> None:
    """Recompute every array of every live node from its spec and the holdings on it."""
    cat = catalog()
    snap = inv.snapshot()
    holdings = inv.holdings()
    for name, row in snap.node_index.items():
        info = snap.nodes[name]
        assert snap.node_names[row] == name and bool(snap.node_valid[row])
        here = [h for h in holdings if h.node == name]
        assert int(snap.cpu_free[row]) == info.cpu_milli - sum(h.cpu_milli for h in here)
        assert int(snap.memory_free[row]) == info.memory_mib - sum(h.memory_mib for h in here)
        by_index = {g.index: g for g in info.gpus}
        grants: dict[int, list[GpuGrant]] = {i: [] for i in by_index}
        for holding in here:
            assert holding.assignment is not None
            for grant in holding.assignment.grants:
                assert grant.index in by_index, (name, grant)
                grants[grant.index].append(grant)
        ordered = sorted(info.gpus, key=lambda g: g.index)
        for slot in range(snap.n_gpus):
            if slot >= len(ordered):
                assert int(snap.gpu_type[row, slot]) == -1
                continue
            device = ordered[slot]
            mine = grants[device.index]
            where = (name, device.index)
            assert int(snap.gpu_index[row, slot]) == device.index
            assert int(snap.gpu_type[row, slot]) == device.type_index
            total = int(snap.total_mib[row, slot])
            assert total == device.memory_mib
            held = sum(g.vram_mib for g in mine)
            if device.mig is None:
                # reserved VRAM <= total. (Not on partitioned GPUs, whose capacity is their
                # slots: the shipped H200/B200 profile sizes add up to more than the GPU.)
                assert held <= total, where
            assert int(snap.free_mib[row, slot]) == total - held, where
            assert int(snap.pods[row, slot]) == len(mine), where
            replicas = device.replicas if device.replicas > 1 else 0
            used_replicas = sum(1 for g in mine if g.replica)
            assert used_replicas <= replicas, where  # replicas used <= replicas
            assert int(snap.replicas[row, slot]) == replicas
            assert int(snap.replicas_free[row, slot]) == replicas - used_replicas, where
            assert bool(snap.healthy[row, slot]) == device.healthy
            if any(g.whole for g in mine):
                assert len(mine) == 1, where  # whole GPUs are never shared
            if device.mig is None:
                assert int(snap.mig_layout[row, slot]) == -1
                assert not any(g.mig_profile for g in mine), where
                continue
            n_slots = int(cat.mig_slots[device.type_index])
            expected = (0xFF << n_slots) & 0xFF
            for g in mine:
                assert g.mig_profile is not None, where
                profile = cat.mig_profile(device.type_index, g.mig_profile)
                assert profile is not None, where
                legal = set(profile.starts) if device.mig.dynamic else {
                    s for p, s in device.mig.instances if p == g.mig_profile} & set(
                    profile.starts)
                assert g.mig_start in legal, where  # only legal starts
                assert g.mig_slices == profile.slices
                span = ((1 << g.mig_slices) - 1) << g.mig_start
                assert g.mig_start + g.mig_slices <= n_slots, where
                assert not expected & span, where  # never overlap (nor phantom slots)
                expected |= span
            assert int(snap.mig_used[row, slot]) == expected, where
    for row in range(snap.n_nodes):
        if not snap.node_valid[row]:
            assert snap.node_names[row] == ""
            assert (snap.gpu_type[row] == -1).all()


InventoryMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_inventory_state_machine = InventoryMachine.TestCase
