"""Cluster-autoscaler template nodes: Node objects the inventory does not know, judged as
described and empty.

Cluster autoscaler simulations call the verbs with ``nodeCacheCapable: false`` and template
nodes that do not exist yet ("would a new node of this group host the pod?"); answering "not in
the inventory" would make it never scale up for GPU pods. Filter and prioritize judge them the
same way: the fit here, and prioritize scores the ones that fit with the strategy, on the same
scratch snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult, fit
from extender.core.request import PlacementRequest
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Inventory
from extender.platform import Platform


@dataclass(frozen=True, eq=False)
class TemplateFit:
    """The fit of template nodes at ``positions`` of the call's names (in that order)."""

    positions: npt.NDArray[np.int64]
    snapshot: ClusterSnapshot
    """A scratch snapshot holding only the template nodes, empty."""
    fit: FitResult


def fit_templates(platform: Platform, placement: PlacementRequest,
                  nodes: Sequence[Mapping[str, Any]], positions: npt.NDArray[np.int64]
                  ) -> TemplateFit:
    """Fit ``nodes`` (the Node objects at ``positions``) as if each were empty."""
    scratch = Inventory(platform.catalog)
    names = []
    for node in nodes:
        info = platform.nodes.decode(node)
        scratch.upsert_node(info)
        names.append(info.name)
    snapshot = scratch.snapshot()
    rows = np.array([snapshot.node_index[name] for name in names], dtype=np.int64)
    return TemplateFit(positions, snapshot, fit(snapshot, placement, rows))
