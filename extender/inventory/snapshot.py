"""An immutable, vectorized view of the cluster at one generation.

Dimension names used in every docstring of ``extender.core``:

- ``n_nodes``: rows of the snapshot (node slots; rows whose ``node_valid`` is False are holes
  left by deleted nodes and never match anything);
- ``n_gpus``: GPU slots per node, padded (``gpu_type == -1`` marks padding);
- ``n_profiles``: MIG profile names in the catalog (``catalog.mig.names``).

Every array is C-contiguous and read-only; the core relies on these invariants and performs no
validation of its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.model import NodeInfo

NO_GPU = -1
"""``gpu_type`` of a padding slot."""
NOT_MIG = -1
"""``mig_layout`` of a GPU that is not partitioned."""
DYNAMIC_MIG = 0
"""``mig_layout`` of a GPU whose instances the extender places (any legal start)."""


Derived = tuple[npt.NDArray[Any], ...]
RowFunction = Callable[["ClusterSnapshot", npt.NDArray[np.int64]], Derived]
T = TypeVar("T")

ROW_ARRAYS = ("node_valid", "cpu_free", "memory_free", "gpu_type", "gpu_index", "total_mib",
              "free_mib", "replicas", "replicas_free", "replicas_shared", "mig_layout",
              "mig_used", "healthy", "pods")
"""Every array of ``ClusterSnapshot`` with a row per node (``node_dra`` too, where it has one):
what a row *is*, apart from its name and version (``row_contents``;
``tests/inventory/test_row_contents.py`` checks that no such field is missing here)."""

CONTENT_ROWS = 16
"""Stale rows looked up by content at most per refresh; more (a first fill, a relist) are
computed together, which is cheaper per row than looking each up."""
CONTENTS_KEPT = 2048
"""Distinct row contents remembered per key (least recently used go)."""
_NO_ROWS: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
_NO_ROWS.flags.writeable = False


class RowCache:
    """Arrays derived row by row from snapshots of one inventory, kept across snapshots.

    A kernel that needs, say, every GPU's free thousandths asks ``derive(key, snapshot,
    compute, rows)``; the cache recomputes only the rows whose ``node_version`` differs from
    the version it last computed them at (a reservation changes one row, so a new snapshot
    costs one row, not the cluster), then returns the arrays gathered at ``rows`` (copies:
    the cache refreshes rows in place).
    ``compute(snapshot, rows)`` must depend on nothing but those rows of that snapshot (and
    whatever ``key`` identifies). Thread-safe; holds a few keys (least recently used go).

    **By content** (``by_content``, optional): a ``compute`` that reads nothing of a row but its
    content (``ClusterSnapshot.row_contents``: not its name) gives equal rows equal values, so
    the few rows a placement changed are first looked up among the contents this key computed
    before (a pool of identical nodes goes through the same few states: the second node to
    reach "3 GPUs taken" costs a lookup, not a kernel run; issue 22).
    """

    def __init__(self, max_keys: int = 8) -> None:
        self._lock = threading.Lock()
        self._max_keys = max_keys
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self.content_hits = 0
        """Stale rows whose values were found by content (not computed)."""

    def derive(self, key: Hashable, snapshot: ClusterSnapshot, compute: RowFunction,
               rows: npt.NDArray[np.int64], *, by_content: bool = False) -> Derived:
        """``compute(snapshot, rows)``, from cache where rows did not change (new arrays)."""
        return self.use(key, snapshot, compute, lambda arrays: tuple(a[rows] for a in arrays),
                        by_content=by_content)

    def refresh(self, key: Hashable, snapshot: ClusterSnapshot, compute: RowFunction, *,
                by_content: bool = False) -> npt.NDArray[np.int64] | None:
        """Bring ``key``'s arrays up to date with ``snapshot`` if the cache holds them: the
        rows that were computed (sorted; empty if none had changed). ``None`` (nothing
        computed) if the cache does not hold ``key``: a refresh ahead of the next call never
        fills the cache for a key no call asked for."""
        with self._lock:
            if key not in self._entries:
                return None
            _, computed = self._up_to_date(key, snapshot, compute, by_content)
            return computed

    def use(self, key: Hashable, snapshot: ClusterSnapshot, compute: RowFunction,
            pick: Callable[[Derived], T], *, by_content: bool = False) -> T:
        """``pick(arrays)`` on the cached arrays of every row, brought up to date with
        ``snapshot``. Runs under the cache's lock; ``pick`` must copy what it keeps (fancy
        indexing does), because rows are refreshed in place later."""
        with self._lock:
            entry, _ = self._up_to_date(key, snapshot, compute, by_content)
            return pick(entry.arrays)

    def _up_to_date(self, key: Hashable, snapshot: ClusterSnapshot, compute: RowFunction,
                    by_content: bool) -> tuple[_Entry, npt.NDArray[np.int64]]:
        """``key``'s entry brought up to date (under the lock), and the rows computed."""
        n = snapshot.n_nodes
        version = snapshot.node_version
        entry = self._entries.get(key)
        if entry is not None and entry.synced is version:
            # brought up to date with this very snapshot already (its arrays never change):
            # no row to compare (a burst's pod reads each cache a few times per snapshot)
            self._entries.move_to_end(key)
            return entry, _NO_ROWS
        added = np.zeros(0, dtype=np.int64)
        if entry is not None and entry.width == snapshot.n_gpus and \
                entry.version.shape[0] < n:
            # nodes were added: compute the new rows, keep the others
            added = np.arange(entry.version.shape[0], n, dtype=np.int64)
            arrays = tuple(np.concatenate([a, f]) for a, f in zip(
                entry.arrays, compute(snapshot, added), strict=True))
            entry = _Entry(np.concatenate([entry.version, version[added]]), entry.width,
                           arrays, entry.by_content)
        if entry is None or entry.version.shape[0] != n or entry.width != snapshot.n_gpus:
            computed = np.arange(n, dtype=np.int64)
            arrays = tuple(np.array(a) for a in compute(snapshot, computed))
            entry = _Entry(version.copy(), snapshot.n_gpus, arrays)
        else:
            stale = (entry.version != version).nonzero()[0]  # old rows only: added are current
            if len(stale):
                fresh = self._by_content(entry, snapshot, compute, stale) \
                    if by_content and len(stale) <= CONTENT_ROWS else compute(snapshot, stale)
                for array, values in zip(entry.arrays, fresh, strict=True):
                    array[stale] = values
                entry.version[stale] = version[stale]
            computed = np.concatenate([stale, added]) if len(added) else stale
        entry.synced = version
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_keys:
            self._entries.popitem(last=False)
        return entry, computed

    def _by_content(self, entry: _Entry, snapshot: ClusterSnapshot, compute: RowFunction,
                    stale: npt.NDArray[np.int64]) -> Derived:
        """``compute(snapshot, stale)``, with the rows whose content was computed before taken
        from ``entry.by_content`` (the rest computed together, and remembered)."""
        keys = snapshot.row_contents(stale)
        kept = entry.by_content
        found: list[Derived | None] = []
        for content in keys:
            values = kept.get(content)
            if values is not None:
                kept.move_to_end(content)
                self.content_hits += 1
            found.append(values)
        missing = [i for i, values in enumerate(found) if values is None]
        if missing:
            computed = compute(snapshot, stale[missing])
            for j, i in enumerate(missing):
                values = tuple(np.array(array[j:j + 1]) for array in computed)
                found[i] = values
                kept[keys[i]] = values
            while len(kept) > CONTENTS_KEPT:
                kept.popitem(last=False)
        if len(found) == 1:
            only = found[0]
            assert only is not None
            return only
        return tuple(np.concatenate(parts) for parts in zip(*found, strict=True))


@dataclass
class _Entry:
    version: npt.NDArray[np.int64]
    width: int
    arrays: Derived
    by_content: OrderedDict[bytes, Derived] = field(default_factory=OrderedDict)
    """One row's values (each array's row, as a 1-row array) per row content computed."""
    synced: npt.NDArray[np.int64] | None = None
    """The ``node_version`` of the snapshot the arrays were last brought up to date with: a
    snapshot's arrays are read-only views the inventory copies before writing
    (``Columns.writable``), so the same object means the same versions."""


@dataclass(frozen=True, eq=False)
class ClusterSnapshot:
    generation: int
    catalog: Catalog
    node_names: tuple[str, ...]
    """Row -> node name ('' for holes)."""
    node_index: Mapping[str, int]
    nodes: Mapping[str, NodeInfo]
    node_valid: npt.NDArray[np.bool_]
    """(n_nodes,) bool."""
    node_version: npt.NDArray[np.int64]
    """(n_nodes,) int64: generation of the row's last change (for per-node caches)."""
    cpu_free: npt.NDArray[np.int64]
    """(n_nodes,) int64 millicores allocatable minus requested by pods on the node."""
    memory_free: npt.NDArray[np.int64]
    """(n_nodes,) int64 MiB."""
    gpu_type: npt.NDArray[np.int16]
    """(n_nodes, n_gpus) int16 catalog index; -1 padding."""
    gpu_index: npt.NDArray[np.int16]
    """(n_nodes, n_gpus) int16 physical GPU index as the node numbers it."""
    total_mib: npt.NDArray[np.int32]
    """(n_nodes, n_gpus) int32 VRAM per GPU."""
    free_mib: npt.NDArray[np.int32]
    """(n_nodes, n_gpus) int32 VRAM not held by any pod (negative only if observed pods
    over-commit a GPU)."""
    replicas: npt.NDArray[np.int16]
    """(n_nodes, n_gpus) int16 time-slice replicas (0: not time-sliced)."""
    replicas_free: npt.NDArray[np.int16]
    replicas_shared: npt.NDArray[np.bool_]
    """(n_nodes, n_gpus) bool: the replicas are ``nvidia.com/gpu.shared`` units (else
    ``nvidia.com/gpu`` units); False on GPUs that are not time-sliced."""
    mig_layout: npt.NDArray[np.int16]
    """(n_nodes, n_gpus) int16: -1 not partitioned, 0 dynamic, >0 row of ``layouts``."""
    mig_used: npt.NDArray[np.uint8]
    """(n_nodes, n_gpus) uint8 bitmask of occupied MIG slots (phantom slots set)."""
    healthy: npt.NDArray[np.bool_]
    pods: npt.NDArray[np.int16]
    """(n_nodes, n_gpus) int16 number of pods holding part of the GPU."""
    layouts: npt.NDArray[np.uint8]
    """(n_layouts, n_profiles) uint8: legal start mask per profile of each static layout."""
    cache: RowCache = field(default_factory=RowCache, repr=False)
    """Derived per-row arrays, shared by every snapshot of the same inventory."""
    node_dra: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """(n_nodes,) bool: the node's GPUs are DRA devices (claims hold them; only whole GPUs
    through a DRA-mapped ``nvidia.com/gpu`` may be asked there)."""

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_gpus(self) -> int:
        return int(self.gpu_type.shape[1])


    def valid_rows(self) -> npt.NDArray[np.int64]:
        return self.node_valid.nonzero()[0].astype(np.int64)

    def row_contents(self, rows: npt.NDArray[np.int64]) -> list[bytes]:
        """Each row's values in every per-node array (``ROW_ARRAYS``, and
        ``node_dra`` where the snapshot has it) with the static MIG layouts they index: equal
        bytes, equal rows but for the node's name. A few rows at a time (``CONTENT_ROWS``)."""
        arrays = [getattr(self, name) for name in ROW_ARRAYS]
        if self.node_dra.shape[0]:
            arrays.append(self.node_dra)
        layouts = self.layouts.tobytes()
        return [b"".join([a[row].tobytes() for a in arrays] + [layouts])
                for row in rows.tolist()]

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """(n_nodes, n_gpus) bool: the slot holds a GPU."""
        return self.gpu_type >= 0
