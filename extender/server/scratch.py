"""Judge Node objects the inventory does not know, as described and empty.

Cluster autoscaler simulations call filter with ``nodeCacheCapable: false`` and template nodes
that do not exist yet ("would a new node of this group host the pod?"); answering "not in the
inventory" would make it never scale up for GPU pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.fit import fit
from extender.core.request import PlacementRequest
from extender.inventory.store import Inventory
from extender.platform import Platform


def evaluate_templates(platform: Platform, placement: PlacementRequest,
                       nodes: Sequence[Mapping[str, Any]]
                       ) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64]]:
    """``(code, params)`` per node, in order, as if each node were empty."""
    scratch = Inventory(platform.catalog)
    rows = []
    for node in nodes:
        info = platform.nodes.decode(node)
        scratch.upsert_node(info)
        rows.append(info.name)
    snapshot = scratch.snapshot()
    indices = np.array([snapshot.node_index[name] for name in rows], dtype=np.int64)
    result = fit(snapshot, placement, indices)
    return result.code, result.params
