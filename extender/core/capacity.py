"""The node-level capacity kube-scheduler can count: per GPU node, what the inventory offers
for shares, as the two extended resources ``gpu-extender.io/gpu-memory`` (bytes, the sum over
the GPUs that may hold VRAM shares) and ``gpu-extender.io/gpu-milli`` (1000 per such GPU).

A GPU may hold shares when it is present, healthy and not MIG-partitioned (the fit's
``capable`` for ``VRAM``/``FRACTION`` requests, type aside: a protected type still holds typed
shares). The figures are a *necessary* node-level condition for in-tree fit, the preemption dry
run, kubelet admission and autoscaler simulations; the extender still decides per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from extender.inventory.snapshot import ClusterSnapshot
from extender.model import RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI
from extender.units import MILLI

MIB = 1024 * 1024


@dataclass(frozen=True)
class ShareCapacity:
    memory_bytes: int
    milli: int

    def quantities(self) -> dict[str, str]:
        """The resources as node status quantities (plain integers)."""
        return {RESOURCE_GPU_MEMORY: str(self.memory_bytes), RESOURCE_GPU_MILLI: str(self.milli)}


def share_capacity(snapshot: ClusterSnapshot) -> dict[str, ShareCapacity]:
    """Every valid node that has at least one GPU slot -> its share capacity (zero when none
    of its GPUs may hold shares: the node then refuses shares at node level too)."""
    capable = snapshot.present & snapshot.healthy & (snapshot.mig_layout < 0)
    memory = np.where(capable, snapshot.total_mib, 0).astype(np.int64).sum(axis=1) * MIB
    count = capable.sum(axis=1).astype(np.int64) * MILLI
    has_gpus = snapshot.present.any(axis=1) & snapshot.node_valid
    return {snapshot.node_names[row]: ShareCapacity(int(memory[row]), int(count[row]))
            for row in np.flatnonzero(has_gpus).tolist()}
