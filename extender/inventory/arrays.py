"""The inventory's struct of arrays: one row per node, one column per GPU slot, copy-on-write.

``Columns`` owns the numpy arrays and knows which of them the latest snapshot shares: a writer
asks ``writable(names)`` before touching state, which copies only the shared arrays among
``names``, so a snapshot costs nothing until the next write and one copy of what that write
touches after it. The store's name maps (names, index, nodes) ride on the same bookkeeping
under the token ``MAPS``: ``writable`` says when the caller must copy them.

``write_gpu`` and ``clear_row`` fill one row from a ``GpuDevice``; ``MigLayouts`` interns the
fixed MIG layouts of the nodes into the table the snapshot carries (row 0: dynamic MIG).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from extender.catalog import Catalog
from extender.inventory.layout import phantom_slots
from extender.inventory.snapshot import DYNAMIC_MIG, NO_GPU, NOT_MIG
from extender.model import GpuDevice

Arrays = dict[str, np.ndarray[Any, Any]]
"""Array name -> array: ``(rows,)`` for node arrays, ``(rows, slots)`` for GPU arrays."""

NODE_ARRAYS = {"node_valid": bool, "node_version": np.int64, "cpu_free": np.int64,
               "memory_free": np.int64, "node_dra": bool}
GPU_ARRAYS = {"gpu_type": np.int16, "gpu_index": np.int16, "total_mib": np.int32,
              "free_mib": np.int32, "replicas": np.int16, "replicas_free": np.int16,
              "replicas_shared": bool,
              "mig_layout": np.int16, "mig_used": np.uint8, "healthy": bool,
              "pods": np.int16}
HOLDING_ARRAYS = ("cpu_free", "memory_free", "free_mib", "pods", "replicas_free", "mig_used",
                  "node_version")
"""What adding or removing a pod's holding writes."""
GPU_FILL = {"gpu_type": NO_GPU, "gpu_index": -1, "mig_layout": NOT_MIG, "mig_used": 0xFF}
"""What an empty GPU slot holds (0 for the arrays not named)."""
MAPS = "maps"
"""The token for the owner's name maps in the shared set."""


class Columns:
    """The arrays, their capacity (rows) and width (GPU slots), and what a snapshot shares."""

    def __init__(self, capacity: int, width: int) -> None:
        self.arrays: Arrays = {}
        self.capacity = 0
        self.width = width
        self.shared: set[str] = set()
        """Arrays (and ``MAPS``) the latest snapshot shares."""
        self.allocate(capacity, width)

    def allocate(self, capacity: int, width: int) -> None:
        """(Re)allocate arrays to ``capacity`` rows x ``width`` slots, keeping contents."""
        new: Arrays = {}
        for name, dtype in NODE_ARRAYS.items():
            array = np.zeros(capacity, dtype=dtype)
            if name in self.arrays:
                array[: self.capacity] = self.arrays[name]
            new[name] = array
        for name, dtype in GPU_ARRAYS.items():
            array = np.full((capacity, width), GPU_FILL.get(name, 0), dtype=dtype)
            if name in self.arrays:
                old = self.arrays[name]
                array[: old.shape[0], : old.shape[1]] = old
            new[name] = array
        self.arrays = new
        self.shared -= set(new)  # fresh arrays: no snapshot holds them
        self.capacity = capacity
        self.width = width

    def writable(self, *names: str) -> bool:
        """Make the arrays of ``names`` (all, and ``MAPS``, if none given) safe to write: copies
        first those a snapshot shares (copy-on-write). ``True`` if the caller must copy its
        name maps too (``MAPS`` was wanted and shared)."""
        if not self.shared:
            return False
        wanted = set(names) if names else set(self.arrays) | {MAPS}
        for name in wanted & self.shared:
            if name != MAPS:
                self.arrays[name] = self.arrays[name].copy()
        maps = MAPS in wanted & self.shared
        self.shared -= wanted
        return maps

    def share_all(self) -> None:
        """A snapshot now holds every array and the name maps."""
        self.shared = set(self.arrays) | {MAPS}


def clear_row(arrays: Arrays, row: int) -> None:
    """Empty every GPU slot of ``row``."""
    for name in GPU_ARRAYS:
        arrays[name][row, :] = GPU_FILL.get(name, 0)


def write_gpu(arrays: Arrays, row: int, slot: int, gpu: GpuDevice, *, layout: int,
              mig_slots: int) -> None:
    """Describe ``gpu``, free, in ``(row, slot)``; ``layout``: its MIG layout row (ignored
    when it is not MIG), ``mig_slots``: its type's MIG slots."""
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
        arrays["mig_layout"][row, slot] = layout
        arrays["mig_used"][row, slot] = phantom_slots(mig_slots)


class MigLayouts:
    """Fixed MIG layouts interned: layout row -> per profile a bit mask of legal starts."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._layouts: list[tuple[tuple[str, int], ...]] = [()]  # row 0: dynamic
        self._index: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}
        self.table = np.zeros((1, len(catalog.mig.names)), dtype=np.uint8)
        """``(layouts, profiles)``: a new array each time a layout is added."""

    def row_of(self, gpu: GpuDevice) -> int:
        """The layout row of a MIG ``gpu`` (``DYNAMIC_MIG`` when the agent may repartition)."""
        assert gpu.mig is not None
        if gpu.mig.dynamic:
            return DYNAMIC_MIG
        return self.intern(gpu.type_index, gpu.mig.instances)

    def intern(self, type_index: int, instances: tuple[tuple[str, int], ...]) -> int:
        # Keyed by type too: the same instance list means different legal starts on types
        # whose profiles share a name (1g.10gb spans 2 slots on an A100-40GB, 1 on an 80GB).
        key = (type_index, tuple(sorted(instances)))
        known = self._index.get(key)
        if known is not None:
            return known
        row = np.zeros(len(self.catalog.mig.names), dtype=np.uint8)
        for profile_name, start in key[1]:
            profile = self.catalog.mig_profile(type_index, profile_name)
            p = self.catalog.mig.index.get(profile_name)
            if profile is not None and p is not None and start in profile.starts:
                row[p] |= 1 << start
        self._layouts.append(key[1])
        self._index[key] = len(self._layouts) - 1
        self.table = np.vstack([self.table, row[None, :]])
        return len(self._layouts) - 1
