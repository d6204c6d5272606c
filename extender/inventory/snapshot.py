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

from collections.abc import Mapping
from dataclasses import dataclass

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
    mig_layout: npt.NDArray[np.int16]
    """(n_nodes, n_gpus) int16: -1 not partitioned, 0 dynamic, >0 row of ``layouts``."""
    mig_used: npt.NDArray[np.uint8]
    """(n_nodes, n_gpus) uint8 bitmask of occupied MIG slots (phantom slots set)."""
    healthy: npt.NDArray[np.bool_]
    pods: npt.NDArray[np.int16]
    """(n_nodes, n_gpus) int16 number of pods holding part of the GPU."""
    layouts: npt.NDArray[np.uint8]
    """(n_layouts, n_profiles) uint8: legal start mask per profile of each static layout."""

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_gpus(self) -> int:
        return int(self.gpu_type.shape[1])

    def rows(self, names: list[str] | tuple[str, ...]) -> tuple[npt.NDArray[np.int64], list[str]]:
        """Rows of the named nodes, and the names the snapshot does not know."""
        index = self.node_index
        rows = []
        unknown = []
        for name in names:
            row = index.get(name)
            if row is None:
                unknown.append(name)
            else:
                rows.append(row)
        return np.array(rows, dtype=np.int64), unknown

    def valid_rows(self) -> npt.NDArray[np.int64]:
        return np.flatnonzero(self.node_valid).astype(np.int64)

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """(n_nodes, n_gpus) bool: the slot holds a GPU."""
        return self.gpu_type >= 0
