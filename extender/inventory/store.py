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
from dataclasses import replace

from extender.catalog import Catalog
from extender.errors import CapacityError, UnknownNodeError
from extender.inventory.arrays import (
    HOLDING_ARRAYS,
    MAPS,
    Arrays,
    Columns,
    MigLayouts,
    clear_row,
    write_gpu,
)
from extender.inventory.grants import apply_holding, check_holding, within_bounds
from extender.inventory.holding import ApplyReport, Holding, HoldingState
from extender.inventory.snapshot import NOT_MIG, ClusterSnapshot, RowCache
from extender.model import Assignment, GpuGrant, NodeInfo, PodKey

__all__ = ["AlreadyHeldError", "ApplyReport", "Holding", "HoldingState", "Inventory"]


class AlreadyHeldError(CapacityError):
    """``assume`` of a pod that is ``BOUND`` or ``OBSERVED``: its holding is the API's, no verb
    replaces it."""


class Inventory:
    def __init__(self, catalog: Catalog, *, gpu_slots: int = 8,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.catalog = catalog
        self._clock = clock
        self._lock = threading.RLock()
        self._generation = 0
        self._rows_used = 0
        self._columns = Columns(64, gpu_slots)
        self._names: list[str] = []
        self._names_changed = False
        """A node came or went since the last snapshot (its ``node_names`` must be rebuilt)."""
        self._index: dict[str, int] = {}
        self._nodes: dict[str, NodeInfo] = {}
        self._slot_of: dict[str, dict[int, int]] = {}  # node -> physical index -> slot
        self._free_rows: list[int] = []
        self._holdings: dict[str, Holding] = {}  # pod uid -> holding
        self._by_node: dict[str, set[str]] = {}  # node -> pod uids
        self._tentative: set[str] = set()
        """UIDs holding an ``ASSUMED`` hold that still has a TTL (prioritize's, not pinned)."""
        self._layouts = MigLayouts(catalog)
        self._snapshot: ClusterSnapshot | None = None
        self._row_cache = RowCache()
        self._synced = threading.Event()
        self.conflicts_total = 0

    # -- storage -----------------------------------------------------------------------------

    def _writable(self, *names: str) -> Arrays:
        """Arrays safe to write: copies first those of ``names`` (all, and the name maps, if
        none given) that a snapshot shares (copy-on-write). Every mutation calls this before
        touching state; a pod's holding changes only the holding arrays, so a reservation
        copies those and leaves the node description arrays shared."""
        if self._columns.writable(*names):
            self._names = list(self._names)
            self._index = dict(self._index)
            self._nodes = dict(self._nodes)
        return self._columns.arrays

    @property
    def _arrays(self) -> Arrays:
        return self._columns.arrays

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
            if len(info.gpus) > self._columns.width:
                self._columns.allocate(self._columns.capacity, len(info.gpus))
                arrays = self._arrays
            row = self._index.get(info.name)
            if row is None:
                row = self._new_row(info.name)
                arrays = self._arrays
            self._nodes[info.name] = info
            self._write_row(arrays, row, info)
            for uid in sorted(self._by_node.get(info.name, ())):
                self._apply(arrays, row, self._holdings[uid], +1, report=report)
            self._touch(row)
            self.conflicts_total += len(report.conflicts)
            return report

    def _new_row(self, name: str) -> int:
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            if self._rows_used == self._columns.capacity:
                self._columns.allocate(self._columns.capacity * 2, self._columns.width)
            row = self._rows_used
            self._rows_used += 1
            self._names.append("")
        self._names[row] = name
        self._index[name] = row
        self._names_changed = True
        return row

    def _write_row(self, arrays: Arrays, row: int, info: NodeInfo) -> None:
        clear_row(arrays, row)
        arrays["node_valid"][row] = True
        arrays["cpu_free"][row] = info.cpu_milli
        arrays["memory_free"][row] = info.memory_mib
        arrays["node_dra"][row] = info.dra
        slots: dict[int, int] = {}
        for slot, gpu in enumerate(sorted(info.gpus, key=lambda g: g.index)):
            slots[gpu.index] = slot
            layout = NOT_MIG if gpu.mig is None else self._layouts.row_of(gpu)
            write_gpu(arrays, row, slot, gpu, layout=layout,
                      mig_slots=int(self.catalog.mig_slots[gpu.type_index]))
        self._slot_of[info.name] = slots

    def remove_node(self, name: str) -> bool:
        """Forget a node; pods recorded on it keep their holdings until they go, and re-apply
        if the node comes back."""
        with self._lock:
            row = self._index.get(name)
            if row is None:
                return False
            arrays = self._writable()
            clear_row(arrays, row)
            arrays["node_valid"][row] = False
            arrays["cpu_free"][row] = 0
            arrays["memory_free"][row] = 0
            arrays["node_dra"][row] = False
            del self._index[name]
            del self._nodes[name]
            self._slot_of.pop(name, None)
            self._names[row] = ""
            self._names_changed = True
            self._free_rows.append(row)
            self._touch(row)
            return True

    def node_names(self) -> list[str]:
        with self._lock:
            return sorted(self._index)

    def node_info(self, name: str) -> NodeInfo | None:
        """What the inventory knows of node ``name`` now, without building a snapshot (a
        snapshot makes the next write copy the arrays it shares)."""
        with self._lock:
            return self._nodes.get(name)

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
            holding = within_bounds(holding, report)
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
        """Release reservations whose TTL passed (no bind came). Returns the pods released.
        O(the holds with a TTL), not O(every pod held): the bound and observed pods, which
        are most of them, are never looked at (this runs under the lock every
        ``scheduling.expiry.EXPIRE_EVERY`` while the watches and binds wait for it)."""
        with self._lock:
            now = self._clock()
            expired = [h for h in map(self._holdings.__getitem__, self._tentative)
                       if h.expires_at is not None and h.expires_at <= now]
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
        arrays = self._writable(*HOLDING_ARRAYS)
        if strict and new is not None:
            check_holding(self._arrays, self._index[new.node], new, old,
                          slots=self._slot_of.get(new.node, {}), catalog=self.catalog,
                          layouts=self._layouts.table)
        touched: set[int] = set()
        if old is not None:
            row = self._index.get(old.node)
            if row is not None:
                self._apply(arrays, row, old, -1, report=ApplyReport())
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
                self._apply(arrays, row, new, +1, report=report)
                touched.add(row)
        self._generation += 1
        for row in touched:
            arrays["node_version"][row] = self._generation

    def _apply(self, arrays: Arrays, row: int, holding: Holding, sign: int, *,
               report: ApplyReport) -> None:
        """Add (sign=+1) or remove (-1) a holding on ``row``, recording conflicts."""
        apply_holding(arrays, row, holding, sign, slots=self._slot_of.get(holding.node, {}),
                      catalog=self.catalog, layouts=self._layouts.table, strict=False,
                      report=report)

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
            if previous is not None and MAPS in self._columns.shared:
                # no node was written since: the names and layouts are the same
                names, layouts = previous.node_names, previous.layouts
            else:
                layouts = self._layouts.table.copy()
                layouts.flags.writeable = False
                if previous is not None and not self._names_changed:
                    names = previous.node_names  # a node changed, none came or went
                else:
                    names = tuple(self._names[:n])
                    self._names_changed = False
            self._columns.share_all()
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


def _same_grants(a: Assignment | None, b: Assignment | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.node == b.node and a.kind == b.kind and sorted(a.grants, key=_grant_key) == \
        sorted(b.grants, key=_grant_key)


def _grant_key(grant: GpuGrant) -> tuple[int, int]:
    return (grant.index, grant.mig_start)
