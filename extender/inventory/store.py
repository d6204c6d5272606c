"""The single source of truth in process memory: every node's GPUs and every pod's holding.

Per-GPU state is a struct of numpy arrays (rows = nodes, columns = GPU slots). Writers hold one
lock; readers take an immutable ``ClusterSnapshot``, which shares the arrays until the next write
copies them (copy-on-write), so a snapshot costs nothing when nothing changed and one copy of
the arrays after a change. Updating a node rewrites only its row.

Holdings come in three states, named as kube-scheduler's cache names them:

- ``ASSUMED`` (``assume``, kube's ``AssumePod``): chosen by the extender, bind not done yet;
  expires after its TTL unless ``pin`` took the TTL away (a bind is in flight);
- ``BOUND`` (``finish_binding``, kube's ``FinishBinding``): the Binding was created, the watch
  has not shown it yet; never expires;
- ``OBSERVED`` (``observe``, kube's ``AddPod``/``UpdatePod``): seen through the API (pod bound,
  annotation present).

``forget`` drops an assumed pod (kube's ``ForgetPod``); ``remove_pod`` drops whatever a pod
holds because it is gone (kube's ``RemovePod``). ``pin`` and ``finish_binding`` flip a state:
no array changes, no generation bump.

The transitions form a one-way ladder (docs/ARCHITECTURE.md, "Holdings"): a verb (``assume``,
``pin``, ``forget``, ``expire``) only ever creates, flips or drops an ``ASSUMED`` holding; once a
pod is ``BOUND`` or ``OBSERVED`` only the API's word (``observe``, ``remove_pod``, a relist)
changes or drops what it holds. ``assume`` of such a pod raises ``AlreadyHeldError`` and
``forget`` of it is a no-op, so a retried scheduling cycle of a bound pod, or a client inventing
a request with its UID, can never move or erase its GPUs.

Complexities: node upsert O(GPUs of the node + its pods), pod add/remove O(grants), snapshot
O(1) when nothing changed, else O(cluster arrays) once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import numpy as np

from extender.catalog import Catalog
from extender.errors import CapacityError, UnknownNodeError
from extender.inventory.layout import MAX_SLOTS, phantom_slots, span_mask
from extender.inventory.snapshot import (
    DYNAMIC_MIG,
    NO_GPU,
    NOT_MIG,
    ClusterSnapshot,
    RowCache,
)
from extender.model import Assignment, GpuDevice, GpuGrant, NodeInfo, PodKey, RequestKind
from extender.units import MAX_GPU_INDEX, MAX_GPU_MEMORY_MIB, MAX_GPUS_PER_POD

_NODE_ARRAYS = {"node_valid": bool, "node_version": np.int64, "cpu_free": np.int64,
                "memory_free": np.int64, "node_dra": bool}
_GPU_ARRAYS = {"gpu_type": np.int16, "gpu_index": np.int16, "total_mib": np.int32,
               "free_mib": np.int32, "replicas": np.int16, "replicas_free": np.int16,
               "replicas_shared": bool,
               "mig_layout": np.int16, "mig_used": np.uint8, "healthy": bool,
               "pods": np.int16}
_HOLDING_ARRAYS = ("cpu_free", "memory_free", "free_mib", "pods", "replicas_free", "mig_used",
                   "node_version")
"""What adding or removing a pod's holding writes."""
_GPU_FILL = {"gpu_type": NO_GPU, "gpu_index": -1, "mig_layout": NOT_MIG, "mig_used": 0xFF}


class HoldingState(Enum):
    ASSUMED = "reserved"
    """The value stays ``reserved``: it is the ``state`` label of the holdings metric."""
    BOUND = "bound"
    OBSERVED = "observed"


class AlreadyHeldError(CapacityError):
    """``assume`` of a pod that is ``BOUND`` or ``OBSERVED``: its holding is the API's, no verb
    replaces it."""


@dataclass(frozen=True)
class Holding:
    """What one pod holds on one node."""

    key: PodKey
    node: str
    assignment: Assignment | None
    cpu_milli: int = 0
    memory_mib: int = 0
    state: HoldingState = HoldingState.OBSERVED
    expires_at: float | None = None


@dataclass
class ApplyReport:
    """Problems met while applying observed state (over-commit, unknown GPU index...)."""

    conflicts: list[str] = field(default_factory=list)


class Inventory:
    def __init__(self, catalog: Catalog, *, gpu_slots: int = 8,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.catalog = catalog
        self._clock = clock
        self._lock = threading.RLock()
        self._generation = 0
        self._capacity = 0
        self._width = gpu_slots
        self._rows_used = 0
        self._arrays: dict[str, np.ndarray[Any, Any]] = {}
        self._shared: set[str] = set()
        """Arrays (and ``"maps"``: names, index, nodes) the latest snapshot shares."""
        self._allocate(64, gpu_slots)
        self._names: list[str] = []
        self._index: dict[str, int] = {}
        self._nodes: dict[str, NodeInfo] = {}
        self._slot_of: dict[str, dict[int, int]] = {}  # node -> physical index -> slot
        self._free_rows: list[int] = []
        self._holdings: dict[str, Holding] = {}  # pod uid -> holding
        self._by_node: dict[str, set[str]] = {}  # node -> pod uids
        self._tentative: set[str] = set()
        """UIDs holding an ``ASSUMED`` hold that still has a TTL (prioritize's, not pinned)."""
        self._layouts: list[tuple[tuple[str, int], ...]] = [()]  # row 0: dynamic
        self._layout_index: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}
        self._layout_table = np.zeros((1, len(catalog.mig.names)), dtype=np.uint8)
        self._snapshot: ClusterSnapshot | None = None
        self._row_cache = RowCache()
        self._synced = threading.Event()
        self.conflicts_total = 0

    # -- storage -----------------------------------------------------------------------------

    def _allocate(self, capacity: int, width: int) -> None:
        """(Re)allocate arrays to ``capacity`` rows x ``width`` slots, keeping contents."""
        new: dict[str, np.ndarray[Any, Any]] = {}
        for name, dtype in _NODE_ARRAYS.items():
            array = np.zeros(capacity, dtype=dtype)
            if name in self._arrays:
                array[: self._capacity] = self._arrays[name]
            new[name] = array
        for name, dtype in _GPU_ARRAYS.items():
            array = np.full((capacity, width), _GPU_FILL.get(name, 0), dtype=dtype)
            if name in self._arrays:
                old = self._arrays[name]
                array[: old.shape[0], : old.shape[1]] = old
            new[name] = array
        self._arrays = new
        self._shared -= set(new)  # fresh arrays: no snapshot holds them
        self._capacity = capacity
        self._width = width

    def _writable(self, *names: str) -> dict[str, np.ndarray[Any, Any]]:
        """Arrays safe to write: copies first those of ``names`` (all, and the name maps, if
        none given) that a snapshot shares (copy-on-write). Every mutation calls this before
        touching state; a pod's holding changes only the holding arrays, so a reservation
        copies those and leaves the node description arrays shared."""
        if self._shared:
            wanted = set(names) if names else set(self._arrays) | {"maps"}
            for name in wanted & self._shared:
                if name == "maps":
                    self._names = list(self._names)
                    self._index = dict(self._index)
                    self._nodes = dict(self._nodes)
                else:
                    self._arrays[name] = self._arrays[name].copy()
            self._shared -= wanted
        return self._arrays

    def _touch(self, row: int | None = None) -> None:
        self._generation += 1
        if row is not None:
            self._arrays["node_version"][row] = self._generation

    @property
    def generation(self) -> int:
        return self._generation

    # -- sync state --------------------------------------------------------------------------

    def mark_synced(self) -> None:
        self._synced.set()

    def has_synced(self) -> bool:
        return self._synced.is_set()


    # -- nodes -------------------------------------------------------------------------------

    def upsert_node(self, info: NodeInfo) -> ApplyReport:
        """Add or replace a node; re-applies the pods it hosts. O(its GPUs + its pods)."""
        with self._lock:
            report = ApplyReport()
            arrays = self._writable()
            if len(info.gpus) > self._width:
                self._allocate(self._capacity, len(info.gpus))
                arrays = self._arrays
            row = self._index.get(info.name)
            if row is None:
                row = self._new_row(info.name)
                arrays = self._arrays
            self._nodes[info.name] = info
            self._write_row(arrays, row, info)
            for uid in sorted(self._by_node.get(info.name, ())):
                self._apply(arrays, row, self._holdings[uid], +1, strict=False, report=report)
            self._touch(row)
            self.conflicts_total += len(report.conflicts)
            return report

    def _new_row(self, name: str) -> int:
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            if self._rows_used == self._capacity:
                self._allocate(self._capacity * 2, self._width)
            row = self._rows_used
            self._rows_used += 1
            self._names.append("")
        self._names[row] = name
        self._index[name] = row
        return row

    def _write_row(self, arrays: dict[str, np.ndarray[Any, Any]], row: int,
                   info: NodeInfo) -> None:
        for name in _GPU_ARRAYS:
            arrays[name][row, :] = _GPU_FILL.get(name, 0)
        arrays["node_valid"][row] = True
        arrays["cpu_free"][row] = info.cpu_milli
        arrays["memory_free"][row] = info.memory_mib
        arrays["node_dra"][row] = info.dra
        slots: dict[int, int] = {}
        for slot, gpu in enumerate(sorted(info.gpus, key=lambda g: g.index)):
            slots[gpu.index] = slot
            self._write_gpu(arrays, row, slot, gpu)
        self._slot_of[info.name] = slots

    def _write_gpu(self, arrays: dict[str, np.ndarray[Any, Any]], row: int, slot: int,
                   gpu: GpuDevice) -> None:
        arrays["gpu_type"][row, slot] = gpu.type_index
        arrays["gpu_index"][row, slot] = gpu.index
        arrays["total_mib"][row, slot] = gpu.memory_mib
        arrays["free_mib"][row, slot] = gpu.memory_mib
        replicas = gpu.replicas if gpu.replicas > 1 else 0
        arrays["replicas"][row, slot] = replicas
        arrays["replicas_free"][row, slot] = replicas
        arrays["replicas_shared"][row, slot] = replicas > 0 and gpu.replicas_shared
        arrays["healthy"][row, slot] = gpu.healthy
        arrays["pods"][row, slot] = 0
        if gpu.mig is None:
            arrays["mig_layout"][row, slot] = NOT_MIG
            arrays["mig_used"][row, slot] = 0xFF
        else:
            layout = DYNAMIC_MIG if gpu.mig.dynamic else self._intern_layout(
                gpu.type_index, gpu.mig.instances)
            arrays["mig_layout"][row, slot] = layout
            arrays["mig_used"][row, slot] = phantom_slots(
                int(self.catalog.mig_slots[gpu.type_index]))

    def _intern_layout(self, type_index: int, instances: tuple[tuple[str, int], ...]) -> int:
        # Keyed by type too: the same instance list means different legal starts on types
        # whose profiles share a name (1g.10gb spans 2 slots on an A100-40GB, 1 on an 80GB).
        key = (type_index, tuple(sorted(instances)))
        known = self._layout_index.get(key)
        if known is not None:
            return known
        row = np.zeros(len(self.catalog.mig.names), dtype=np.uint8)
        for profile_name, start in key[1]:
            profile = self.catalog.mig_profile(type_index, profile_name)
            p = self.catalog.mig.index.get(profile_name)
            if profile is not None and p is not None and start in profile.starts:
                row[p] |= 1 << start
        self._layouts.append(key[1])
        self._layout_index[key] = len(self._layouts) - 1
        self._layout_table = np.vstack([self._layout_table, row[None, :]])
        return len(self._layouts) - 1

    def remove_node(self, name: str) -> bool:
        """Forget a node; pods recorded on it keep their holdings until they go, and re-apply
        if the node comes back."""
        with self._lock:
            row = self._index.get(name)
            if row is None:
                return False
            arrays = self._writable()
            for array_name in _GPU_ARRAYS:
                arrays[array_name][row, :] = _GPU_FILL.get(array_name, 0)
            arrays["node_valid"][row] = False
            arrays["cpu_free"][row] = 0
            arrays["memory_free"][row] = 0
            arrays["node_dra"][row] = False
            del self._index[name]
            del self._nodes[name]
            self._slot_of.pop(name, None)
            self._names[row] = ""
            self._free_rows.append(row)
            self._touch(row)
            return True

    def node_names(self) -> list[str]:
        with self._lock:
            return sorted(self._index)

    # -- pods --------------------------------------------------------------------------------

    def observe(self, holding: Holding) -> ApplyReport:
        """Record what the API says a pod holds (replaces what we had for it)."""
        with self._lock:
            report = ApplyReport()
            uid = holding.key.uid
            current = self._holdings.get(uid)
            if current is not None and current.node == holding.node and \
                    _same_grants(current.assignment, holding.assignment) and \
                    (current.cpu_milli, current.memory_mib) == \
                    (holding.cpu_milli, holding.memory_mib):
                self._holdings[uid] = replace(current, state=HoldingState.OBSERVED,
                                              expires_at=None, assignment=holding.assignment)
                self._tentative.discard(uid)
                return report
            holding = _within_bounds(holding, report)
            self._replace(uid, replace(holding, state=HoldingState.OBSERVED, expires_at=None),
                          strict=False, report=report)
            self.conflicts_total += len(report.conflicts)
            return report

    def remove_pod(self, uid: str) -> bool:
        """The pod is gone (deleted, finished): release everything it held."""
        with self._lock:
            if uid not in self._holdings:
                return False
            self._replace(uid, None, strict=False, report=ApplyReport())
            return True

    def assume(self, key: PodKey, assignment: Assignment, *, cpu_milli: int = 0,
                memory_mib: int = 0, ttl: float | None = None) -> None:
        """Hold ``assignment`` for a pod being bound (``ASSUMED``); raises ``CapacityError``
        (and changes nothing) if it would break a per-GPU invariant. Replaces an earlier
        holding of the same pod, but never a ``BOUND`` or ``OBSERVED`` one: that raises
        ``AlreadyHeldError`` (a ``CapacityError``). ``ttl`` ``None``: it never expires."""
        with self._lock:
            current = self._holdings.get(key.uid)
            if current is not None and current.state is not HoldingState.ASSUMED:
                raise AlreadyHeldError(f"pod {key} is already {current.state.value} on node "
                                       f"{current.node}; only the API changes that holding")
            if assignment.node not in self._index:
                raise UnknownNodeError(f"node {assignment.node!r} is not in the inventory")
            expires = None if ttl is None else self._clock() + ttl
            holding = Holding(key, assignment.node, assignment, cpu_milli, memory_mib,
                              HoldingState.ASSUMED, expires)
            self._replace(key.uid, holding, strict=True, report=ApplyReport())

    def pin(self, uid: str, assignment: Assignment) -> bool:
        """Take the TTL off the pod's assumed ``assignment`` while its bind runs: a state
        flip (the GPUs are already counted). ``False`` if the pod no longer holds exactly
        that assumption (it expired and was swept, or was replaced): choose again."""
        with self._lock:
            current = self._holdings.get(uid)
            if current is None or current.state is not HoldingState.ASSUMED or \
                    current.assignment is not assignment:
                return False
            if current.expires_at is not None:
                self._holdings[uid] = replace(current, expires_at=None)
            self._tentative.discard(uid)
            return True

    def unpin(self, uid: str, ttl: float) -> bool:
        """Give a pinned ``ASSUMED`` hold a TTL again: its bind ended without an answer (the
        Binding may exist), so the GPUs stay held until the watch says, or the TTL passes. A
        state flip; ``False`` if the pod holds no such hold."""
        with self._lock:
            current = self._holdings.get(uid)
            if current is None or current.state is not HoldingState.ASSUMED:
                return False
            self._holdings[uid] = replace(current, expires_at=self._clock() + ttl)
            self._tentative.add(uid)
            return True

    def finish_binding(self, uid: str) -> None:
        """The Binding exists: keep the reservation until the watch confirms it."""
        with self._lock:
            current = self._holdings.get(uid)
            if current is not None and current.state is HoldingState.ASSUMED:
                self._holdings[uid] = replace(current, state=HoldingState.BOUND, expires_at=None)
                self._tentative.discard(uid)

    def forget(self, uid: str) -> bool:
        """Drop an assumed pod's holding (idempotent). Bound and observed holdings are left
        alone: the Binding exists, so only the API can say those pods are gone or moved
        (``observe``, ``remove_pod``, a relist)."""
        with self._lock:
            current = self._holdings.get(uid)
            if current is None or current.state is not HoldingState.ASSUMED:
                return False
            self._replace(uid, None, strict=False, report=ApplyReport())
            return True

    def expire(self) -> list[PodKey]:
        """Release reservations whose TTL passed (no bind came). Returns the pods released."""
        with self._lock:
            now = self._clock()
            expired = [h for h in self._holdings.values()
                       if h.state is HoldingState.ASSUMED and h.expires_at is not None
                       and h.expires_at <= now]
            for holding in expired:
                self._replace(holding.key.uid, None, strict=False, report=ApplyReport())
            return [h.key for h in expired]

    def holding(self, uid: str) -> Holding | None:
        with self._lock:
            return self._holdings.get(uid)

    def tentative_holds(self) -> list[Holding]:
        """The ``ASSUMED`` holds that still have a TTL (prioritize's, no bind in flight yet):
        O(their number), which the prioritize hold budget keeps small."""
        with self._lock:
            return [self._holdings[uid] for uid in self._tentative]

    def holdings(self) -> list[Holding]:
        with self._lock:
            return list(self._holdings.values())

    def _replace(self, uid: str, new: Holding | None, *, strict: bool,
                 report: ApplyReport) -> None:
        """Swap a pod's holding atomically: on a strict failure nothing changes."""
        old = self._holdings.get(uid)
        arrays = self._writable(*_HOLDING_ARRAYS)
        if strict and new is not None:
            self._check(new, old)
        touched: set[int] = set()
        if old is not None:
            row = self._index.get(old.node)
            if row is not None:
                self._apply(arrays, row, old, -1, strict=False, report=ApplyReport())
                touched.add(row)
            self._by_node.get(old.node, set()).discard(uid)
            del self._holdings[uid]
            self._tentative.discard(uid)
        if new is not None:
            self._holdings[uid] = new
            if new.state is HoldingState.ASSUMED and new.expires_at is not None:
                self._tentative.add(uid)
            self._by_node.setdefault(new.node, set()).add(uid)
            row = self._index.get(new.node)
            if row is not None:
                self._apply(arrays, row, new, +1, strict=False, report=report)
                touched.add(row)
        self._generation += 1
        for row in touched:
            arrays["node_version"][row] = self._generation

    def _check(self, new: Holding, old: Holding | None) -> None:
        """Raise ``CapacityError`` if ``new`` does not fit (``old`` released first)."""
        row = self._index[new.node]
        probe = {name: self._arrays[name][row].copy() for name in _GPU_ARRAYS}
        probe_arrays = {name: array[None, :] for name, array in probe.items()}
        if old is not None and old.node == new.node:
            self._apply(probe_arrays, 0, old, -1, strict=False, report=ApplyReport())
        self._apply(probe_arrays, 0, new, +1, strict=True, report=ApplyReport(),
                    node=new.node)

    def _apply(self, arrays: dict[str, np.ndarray[Any, Any]], row: int, holding: Holding,
               sign: int, *, strict: bool, report: ApplyReport, node: str | None = None
               ) -> None:
        """Add (sign=+1) or remove (-1) a holding's grants on ``row``.

        ``strict``: raise ``CapacityError`` on any invariant violation (used on a probe copy).
        Otherwise apply anyway and record the conflict: observed state is the truth even when
        it is wrong, and hiding it would over-commit further.
        """
        node = node or holding.node
        if "cpu_free" in arrays:
            arrays["cpu_free"][row] -= sign * holding.cpu_milli
            arrays["memory_free"][row] -= sign * holding.memory_mib
        assignment = holding.assignment
        if assignment is None:
            return
        slots = self._slot_of.get(node, {})
        kind = assignment.kind
        seen: set[int] = set()
        for grant in assignment.grants:
            slot = slots.get(grant.index)
            if slot is None:
                self._problem(strict, report, f"{holding.key}: GPU {grant.index} is not on "
                                              f"node {node}")
                continue
            if kind in (RequestKind.WHOLE, RequestKind.SHARED) and grant.index in seen:
                self._problem(strict, report, f"{holding.key}: GPU {grant.index} granted twice")
            seen.add(grant.index)
            if sign > 0:
                self._check_grant(arrays, row, slot, holding=holding, grant=grant,
                                  strict=strict, report=report)
            arrays["free_mib"][row, slot] -= sign * grant.vram_mib
            arrays["pods"][row, slot] += sign
            if grant.replica:
                arrays["replicas_free"][row, slot] -= sign
            if grant.mig_profile is not None and grant.mig_start >= 0:
                span = span_mask(grant.mig_start, grant.mig_slices)
                if sign > 0:
                    arrays["mig_used"][row, slot] |= span
                else:
                    arrays["mig_used"][row, slot] &= ~np.uint8(span)

    def _check_grant(self, arrays: dict[str, np.ndarray[Any, Any]], row: int, slot: int, *,
                     holding: Holding, grant: GpuGrant, strict: bool,
                     report: ApplyReport) -> None:
        where = f"{holding.key} on {holding.node} GPU {grant.index}"
        if not arrays["healthy"][row, slot] and strict:
            self._problem(strict, report, f"{where}: GPU is unhealthy")
        layout = int(arrays["mig_layout"][row, slot])
        if grant.mig_profile is not None:
            self._check_mig(arrays, row, slot, grant=grant, where=where, strict=strict,
                            report=report)
            return
        if layout != NOT_MIG:
            self._problem(strict, report, f"{where}: GPU is MIG-partitioned; only MIG "
                                          "instances may use it")
        free = int(arrays["free_mib"][row, slot])
        if grant.vram_mib < 1:
            # a share of 0 MiB would fit even on a GPU held whole
            self._problem(strict, report, f"{where}: a GPU grant must hold at least 1 MiB "
                                          f"VRAM, not {grant.vram_mib}")
        if grant.whole and grant.vram_mib != int(arrays["total_mib"][row, slot]):
            # a whole GPU holds all its VRAM, so no share can join it later
            self._problem(strict, report, f"{where}: a whole GPU grant must hold all "
                                          f"{int(arrays['total_mib'][row, slot])} MiB, not "
                                          f"{grant.vram_mib}")
        if grant.whole:
            if int(arrays["replicas"][row, slot]) > 0:
                self._problem(strict, report, f"{where}: GPU is time-sliced; it gives replicas, "
                                              "not whole GPUs")
            if int(arrays["pods"][row, slot]) > 0 or free != int(arrays["total_mib"][row, slot]):
                self._problem(strict, report, f"{where}: whole GPU is already in use")
        elif grant.replica:
            if int(arrays["replicas"][row, slot]) <= 1:
                self._problem(strict, report, f"{where}: GPU is not time-sliced")
            elif int(arrays["replicas_free"][row, slot]) < 1:
                self._problem(strict, report, f"{where}: no time-slice replica left")
            kind = holding.assignment.kind if holding.assignment else None
            shared = bool(arrays["replicas_shared"][row, slot])
            if kind is RequestKind.WHOLE and shared:
                self._problem(strict, report, f"{where}: its replicas are "
                                              "nvidia.com/gpu.shared units, not nvidia.com/gpu")
            if kind is RequestKind.SHARED and not shared:
                self._problem(strict, report, f"{where}: its replicas are nvidia.com/gpu "
                                              "units, not nvidia.com/gpu.shared")
        if grant.vram_mib > free:
            self._problem(strict, report, f"{where}: needs {grant.vram_mib} MiB VRAM, "
                                          f"{free} free")

    def _check_mig(self, arrays: dict[str, np.ndarray[Any, Any]], row: int, slot: int, *,
                   grant: GpuGrant, where: str, strict: bool, report: ApplyReport) -> None:
        layout = int(arrays["mig_layout"][row, slot])
        type_index = int(arrays["gpu_type"][row, slot])
        assert grant.mig_profile is not None
        profile = self.catalog.mig_profile(type_index, grant.mig_profile)
        if layout == NOT_MIG or profile is None:
            self._problem(strict, report, f"{where}: MIG {grant.mig_profile} is not possible "
                                          "on this GPU")
            return
        if grant.mig_slices != profile.slices:
            self._problem(strict, report, f"{where}: MIG {grant.mig_profile} spans "
                                          f"{profile.slices} slots, not {grant.mig_slices}")
        if not 0 <= grant.mig_start < MAX_SLOTS:
            self._problem(strict, report, f"{where}: MIG start slot {grant.mig_start} is out "
                                          f"of range 0..{MAX_SLOTS - 1}")
            return
        p = self.catalog.mig.index[grant.mig_profile]
        legal = profile.start_mask if layout == DYNAMIC_MIG else int(self._layout_table[layout, p])
        if not legal >> grant.mig_start & 1:
            self._problem(strict, report, f"{where}: MIG {grant.mig_profile} may not start at "
                                          f"slot {grant.mig_start}")
        if int(arrays["mig_used"][row, slot]) & span_mask(grant.mig_start, profile.slices):
            self._problem(strict, report, f"{where}: MIG slots {grant.mig_start}.."
                                          f"{grant.mig_start + profile.slices - 1} overlap an "
                                          "instance in use")

    def _problem(self, strict: bool, report: ApplyReport, message: str) -> None:
        if strict:
            raise CapacityError(message)
        report.conflicts.append(message)

    # -- snapshots ---------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        """An immutable view; the same object until the next change."""
        with self._lock:
            if self._snapshot is not None and self._snapshot.generation == self._generation:
                return self._snapshot
            n = self._rows_used
            views = {}
            for name, array in self._arrays.items():
                view = array[:n]
                view.flags.writeable = False
                views[name] = view
            previous = self._snapshot
            if previous is not None and "maps" in self._shared:
                # no node came or went since: the names and layouts are the same
                names, layouts = previous.node_names, previous.layouts
            else:
                names = tuple(self._names[:n])
                layouts = self._layout_table.copy()
                layouts.flags.writeable = False
            self._shared = set(self._arrays) | {"maps"}
            self._snapshot = ClusterSnapshot(
                generation=self._generation,
                catalog=self.catalog,
                node_names=names,
                node_index=self._index,
                nodes=self._nodes,
                layouts=layouts,
                cache=self._row_cache,
                **views,
            )
            return self._snapshot

    # -- bulk --------------------------------------------------------------------------------

    def replace_all(self, nodes: Iterable[NodeInfo], holdings: Iterable[Holding]
                    ) -> dict[str, int]:
        """Make the inventory equal to a fresh list (reconcile); keeps live reservations.

        Returns counts of what had drifted: nodes added/removed/changed, pods added/removed/
        changed.
        """
        with self._lock:
            repairs = {"nodes_added": 0, "nodes_removed": 0, "nodes_changed": 0,
                       "pods_added": 0, "pods_removed": 0, "pods_changed": 0}
            fresh_nodes = {n.name: n for n in nodes}
            for name in list(self._index):
                if name not in fresh_nodes:
                    self.remove_node(name)
                    repairs["nodes_removed"] += 1
            for name, info in fresh_nodes.items():
                known_node = self._nodes.get(name)
                if known_node is None:
                    repairs["nodes_added"] += 1
                elif known_node != info:
                    repairs["nodes_changed"] += 1
                else:
                    continue
                self.upsert_node(info)
            fresh = {h.key.uid: h for h in holdings}
            for uid, current in list(self._holdings.items()):
                if uid not in fresh and current.state is HoldingState.OBSERVED:
                    self.remove_pod(uid)
                    repairs["pods_removed"] += 1
            for uid, holding in fresh.items():
                known = self._holdings.get(uid)
                if known is None:
                    repairs["pods_added"] += 1
                elif known.node != holding.node or not _same_grants(
                        known.assignment, holding.assignment) or \
                        (known.cpu_milli, known.memory_mib) != \
                        (holding.cpu_milli, holding.memory_mib):
                    repairs["pods_changed"] += 1
                elif known.state is HoldingState.OBSERVED:
                    continue
                self.observe(holding)
            return repairs


def _within_bounds(holding: Holding, report: ApplyReport) -> Holding:
    """Validate before applying: a grant no GPU can have (the decoders refuse those; this
    guards every other caller) would overflow the arrays half-way through an apply, so such
    an assignment is not counted at all, and reported."""
    assignment = holding.assignment
    if assignment is None:
        return holding
    for grant in assignment.grants:
        mig_ok = grant.mig_profile is None or (
            0 <= grant.mig_start < MAX_SLOTS
            and 1 <= grant.mig_slices <= MAX_SLOTS - grant.mig_start)
        if not (0 <= grant.index < MAX_GPU_INDEX and 0 <= grant.vram_mib <= MAX_GPU_MEMORY_MIB
                and mig_ok) or len(assignment.grants) > MAX_GPUS_PER_POD:
            report.conflicts.append(f"{holding.key}: GPU grant {grant} is out of range; its "
                                    "assignment is not counted")
            return replace(holding, assignment=None)
    return holding


def _same_grants(a: Assignment | None, b: Assignment | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.node == b.node and a.kind == b.kind and sorted(a.grants, key=_grant_key) == \
        sorted(b.grants, key=_grant_key)


def _grant_key(grant: GpuGrant) -> tuple[int, int]:
    return (grant.index, grant.mig_start)
