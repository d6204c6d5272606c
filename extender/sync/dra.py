"""DRA objects -> the inventory: a DRA-managed node's GPUs, and the holds of allocated claims.

``DraState`` keeps what the three DRA watches (ResourceSlices, ResourceClaims, DeviceClasses)
delivered, decoded (``kube/decode_dra.py``); ``DraApplier`` is their sink and applies each
change under the ``InventoryApplier``'s lock (one lock for everything that comes from the API):

- a node whose Node object advertises no GPUs (no ``nvidia.com/gpu`` allocatable, no agent
  annotation) and whose pool publishes ``gpu`` devices is *DRA-managed*: its GPUs are the
  pool's (``merge``), marked ``dra_device``;
- every allocated claim of the driver is one ``OBSERVED`` holding keyed by the claim's UID:
  a full GPU holds all of it, a ``shareID`` its ``consumedCapacity.memory``, a MIG device its
  memory on the GPU whose counter set it consumes (so the full GPU is off the market),
  ``adminAccess`` nothing. Pods on DRA-managed nodes hold no GPU of their own
  (``InventoryApplier``): the claims do, so nothing is counted twice.

Claims whose pool is not known yet are held again when their node's devices arrive.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from extender.catalog import Catalog
from extender.inventory.store import Holding, HoldingState, Inventory
from extender.kube import objects
from extender.kube.decode_dra import (
    DRA_DRIVER,
    GPU_KINDS,
    DraClaim,
    DraClass,
    DraDevice,
    DraSlice,
    complete_pools,
    decode_claim,
    decode_device_class,
    decode_slice,
    node_devices,
)
from extender.kube.shape import ShapeError
from extender.model import Assignment, GpuGrant, NodeInfo, PodKey, RequestKind

_log = logging.getLogger(__name__)
T = TypeVar("T")

DELETED = "DELETED"
CLAIM_SUFFIX = " (ResourceClaim)"
"""Appended to a claim's name in its holding's key, so logs and ``inspect`` tell it from a
pod."""


@dataclass(frozen=True)
class ClaimHold:
    """What one allocated claim holds on one node, and what could not be placed."""

    holding: Holding | None
    problems: tuple[str, ...] = ()


def claim_hold(claim: DraClaim, node: NodeInfo | None, catalog: Catalog) -> ClaimHold:
    """The holding of ``claim`` on ``node`` (the node its results' pool names); ``None``
    when it holds nothing there (unallocated, admin access only, node unknown)."""
    if node is None or not claim.results:
        return ClaimHold(None)
    refs = {ref.name: ref for ref in node.dra_devices}
    gpus = {gpu.index: gpu for gpu in node.gpus}
    grants: list[GpuGrant] = []
    problems: list[str] = []
    for result in claim.results:
        if result.admin_access:
            continue
        ref = refs.get(result.device)
        gpu = gpus.get(ref.gpu_index) if ref is not None else None
        if ref is None or gpu is None:
            problems.append(f"claim {claim.namespace}/{claim.name}: device {result.device} is "
                            f"not published in pool {result.pool}")
            continue
        if result.consumed_mib or result.share_id:
            grants.append(GpuGrant(gpu.index, max(1, result.consumed_mib), uuid=ref.uuid))
        elif ref.kind in GPU_KINDS:
            grants.append(GpuGrant(gpu.index, gpu.memory_mib, whole=True, uuid=ref.uuid))
        else:
            grants.append(GpuGrant(gpu.index, min(ref.memory_mib, gpu.memory_mib) or 1,
                                   uuid=ref.uuid))
    if not grants:
        return ClaimHold(None, tuple(problems))
    whole = all(g.whole for g in grants)
    type_index = gpus[grants[0].index].type_index
    assignment = Assignment(node=node.name, kind=RequestKind.WHOLE if whole else RequestKind.VRAM,
                            grants=tuple(grants), type_id=catalog.id_of(type_index))
    key = PodKey(claim.namespace, claim.name + CLAIM_SUFFIX, claim.uid)
    return ClaimHold(Holding(key, node.name, assignment), tuple(problems))


def pod_assignment(claim: DraClaim, node: NodeInfo, catalog: Catalog) -> Assignment | None:
    """What a pod whose extended-resource claim is ``claim`` was given on ``node``: the
    devices DRA allocated, with their UUIDs (for ``gpu-extender.io/assigned``)."""
    holding = claim_hold(claim, node, catalog).holding
    return holding.assignment if holding is not None else None


class DraState:
    """The DRA objects seen so far, decoded; not thread-safe (``DraApplier`` locks)."""

    def __init__(self, catalog: Catalog, driver: str = DRA_DRIVER) -> None:
        self.catalog = catalog
        self.driver = driver
        self.slices: dict[str, DraSlice] = {}
        self.claims: dict[str, DraClaim] = {}
        self.classes: dict[str, DraClass] = {}
        self.pool_nodes: dict[str, str] = {}
        """Pool -> node, for the complete pools."""
        self.node_pools: dict[str, tuple[DraDevice, ...]] = {}
        """Node -> the devices of its complete pools."""
        self.decode_failures = 0

    def rebuild_pools(self) -> set[str]:
        """Recompute the complete pools; returns the nodes whose devices changed."""
        pools = complete_pools(self.slices.values())
        fresh: dict[str, tuple[DraDevice, ...]] = {}
        self.pool_nodes = {}
        for pool, (node, devices) in pools.items():
            fresh[node] = fresh.get(node, ()) + devices
            self.pool_nodes[pool] = node
        changed = {n for n in set(fresh) | set(self.node_pools)
                   if fresh.get(n) != self.node_pools.get(n)}
        self.node_pools = fresh
        return changed

    def merge(self, info: NodeInfo) -> NodeInfo:
        """``info`` (as the Node decoder made it, or merged before) with the node's DRA GPUs
        when it is DRA-managed; unchanged otherwise."""
        base = replace(info, gpus=(), dra_devices=(),
                       problems=tuple(p for p in info.problems if not p.startswith("DRA "))) \
            if info.dra else info
        devices = self.node_pools.get(base.name)
        if not devices or base.gpus:
            return base
        gpus, refs, problems = node_devices(devices, self.catalog)
        if not gpus:
            return base
        return replace(base, gpus=gpus, dra_devices=refs,
                       problems=base.problems + tuple(problems))

    def extended_resources(self) -> dict[str, str]:
        """Extended resource name -> the DeviceClass that maps it (KEP-5004)."""
        return {c.extended_resource: c.name for c in sorted(
            self.classes.values(), key=lambda c: c.name) if c.extended_resource}

    def node_of(self, claim: DraClaim) -> str:
        pools = {r.pool for r in claim.results}
        return self.pool_nodes.get(min(pools), min(pools)) if pools else ""


class DraApplier:
    """The sink of the three DRA watches: decodes, keeps ``DraState`` and writes the
    inventory, under ``lock`` (the ``InventoryApplier``'s)."""

    def __init__(self, state: DraState, inventory: Inventory, lock: AbstractContextManager[Any],
                 nodes: Callable[[], Mapping[str, NodeInfo]],
                 refresh: Callable[[str], None]) -> None:
        self.state = state
        self._inventory = inventory
        self._lock = lock
        self._nodes = nodes
        self._refresh = refresh
        """``refresh(node)``: re-merge a node's DRA GPUs (``InventoryApplier.refresh_dra``),
        called under the lock."""

    # -- ResourceSlices ----------------------------------------------------------------------

    def slice_event(self, event_type: str, obj: dict[str, Any]) -> None:
        with self._lock:
            _keep(self.state.slices, objects.name(obj),
                  None if event_type == DELETED else self._decode(self._slice, obj))
            self._pools_changed()

    def replace_slices(self, items: list[dict[str, Any]]) -> dict[str, int]:
        with self._lock:
            fresh = {}
            for obj in items:
                decoded = self._decode(self._slice, obj)
                if decoded is not None:
                    fresh[objects.name(obj)] = decoded
            self.state.slices = fresh
            return {"nodes_changed": self._pools_changed()}

    def _pools_changed(self) -> int:
        changed = self.state.rebuild_pools()
        for node in sorted(changed):
            self._refresh(node)
            self._hold_claims_on(node)
        return len(changed)

    # -- ResourceClaims ----------------------------------------------------------------------

    def claim_event(self, event_type: str, obj: dict[str, Any]) -> None:
        with self._lock:
            uid = objects.uid(obj)
            decoded = None if event_type == DELETED else self._decode(self._claim, obj)
            if decoded is None or not decoded.allocated:
                self.state.claims.pop(uid, None)
                self._inventory.remove_pod(uid)
                return
            self.state.claims[uid] = decoded
            self._hold(decoded)

    def replace_claims(self, items: list[dict[str, Any]]) -> dict[str, int]:
        with self._lock:
            fresh = {}
            for obj in items:
                decoded = self._decode(self._claim, obj)
                if decoded is not None and decoded.allocated:
                    fresh[decoded.uid] = decoded
            removed = [uid for uid in self.state.claims if uid not in fresh]
            for uid in removed:
                self._inventory.remove_pod(uid)
            added = sum(1 for uid in fresh if uid not in self.state.claims)
            self.state.claims = fresh
            for claim in fresh.values():
                self._hold(claim)
            return {"pods_added": added, "pods_removed": len(removed)}

    def holdings(self) -> list[Holding]:
        """Every claim's holding, for a pod relist (which replaces all observed holdings)."""
        out = []
        for claim in self.state.claims.values():
            hold = claim_hold(claim, self._nodes().get(self.state.node_of(claim)),
                              self.state.catalog)
            if hold.holding is not None:
                out.append(hold.holding)
        return out

    def _hold(self, claim: DraClaim) -> None:
        hold = claim_hold(claim, self._nodes().get(self.state.node_of(claim)), self.state.catalog)
        for problem in hold.problems:
            _log.warning("DRA claim problem", extra={"fields": {"problem": problem}})
        if hold.holding is None:
            self._inventory.remove_pod(claim.uid)
            return
        self._drop_guesses(claim, hold.holding.node)
        report = self._inventory.observe(hold.holding)
        for conflict in report.conflicts:
            _log.warning("DRA claim over-commits a GPU", extra={"fields": {
                "claim": f"{claim.namespace}/{claim.name}", "conflict": conflict}})

    def _drop_guesses(self, claim: DraClaim, node: str) -> None:
        """A claim reserved for a pod was allocated in PreBind, so that pod's bind is
        imminent: the GPUs prioritize assumed for it there were a guess, and the claim now
        holds the real ones. The guess goes (its CPU and memory stay held), so the two are
        not counted together."""
        for uid in claim.reserved_for:
            current = self._inventory.holding(uid)
            if current is None or current.state is not HoldingState.ASSUMED or \
                    current.node != node or current.assignment is None or \
                    not current.assignment.grants:
                continue
            self._inventory.assume(current.key, Assignment(node, RequestKind.WHOLE, ()),
                                   cpu_milli=current.cpu_milli,
                                   memory_mib=current.memory_mib, ttl=None)

    def _hold_claims_on(self, node: str) -> None:
        for claim in self.state.claims.values():
            if self.state.node_of(claim) == node:
                self._hold(claim)

    # -- DeviceClasses -----------------------------------------------------------------------

    def class_event(self, event_type: str, obj: dict[str, Any]) -> None:
        with self._lock:
            _keep(self.state.classes, objects.name(obj),
                  None if event_type == DELETED else self._decode(decode_device_class, obj))

    def replace_classes(self, items: list[dict[str, Any]]) -> dict[str, int]:
        with self._lock:
            decoded = (self._decode(decode_device_class, obj) for obj in items)
            self.state.classes = {c.name: c for c in decoded if c is not None}
            return {}

    def _slice(self, obj: dict[str, Any]) -> DraSlice | None:
        return decode_slice(obj, self.state.driver)

    def _claim(self, obj: dict[str, Any]) -> DraClaim:
        return decode_claim(obj, self.state.driver)

    def _decode(self, decoder: Callable[[dict[str, Any]], T], obj: dict[str, Any]) -> T | None:
        try:
            return decoder(obj)
        except ShapeError as exc:
            self.state.decode_failures += 1
            _log.warning("DRA object not understood; ignored", extra={"fields": {
                "object": objects.name(obj), "error": str(exc)}})
            return None


def _keep(table: dict[str, T], name: str, decoded: T | None) -> None:
    """``decoded`` under ``name``, or ``name`` gone (deleted, or not understood)."""
    if decoded is None:
        table.pop(name, None)
    else:
        table[name] = decoded
