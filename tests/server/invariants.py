"""Per-GPU invariants, checked on what the API holds (the persisted truth) and on the
inventory's arrays; and a per-node comparison of two inventories (restart safety)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Inventory
from extender.kube import objects
from extender.kube.annotations import decode_assignment
from extender.model import ANNOTATION_ASSIGNED, GpuGrant

GPU_ARRAYS = ("free_mib", "pods", "replicas_free", "mig_used", "total_mib", "gpu_type")


def grants_by_gpu(pods: list[dict[str, Any]]) -> dict[tuple[str, int], list[tuple[str, GpuGrant]]]:
    """(node, GPU index) -> [(pod, grant)] for every bound pod with our annotation."""
    out: dict[tuple[str, int], list[tuple[str, GpuGrant]]] = defaultdict(list)
    for pod in pods:
        node = objects.node_name(pod)
        text = objects.annotations(pod).get(ANNOTATION_ASSIGNED)
        if not node or text is None:
            continue
        assignment = decode_assignment(text)
        assert assignment.node == node, objects.name(pod)
        indices = [g.index for g in assignment.grants]
        if assignment.kind.value in ("whole", "shared"):
            assert len(indices) == len(set(indices)), "two units of one GPU for one pod"
        for grant in assignment.grants:
            out[(node, grant.index)].append((objects.name(pod), grant))
    return out


def assert_gpu_invariants(pods: list[dict[str, Any]], inventory: Inventory) -> None:
    snapshot = inventory.snapshot()
    for (node, index), held in grants_by_gpu(pods).items():
        row = snapshot.node_index[node]
        slot = int(np.flatnonzero(snapshot.gpu_index[row] == index)[0])
        total = int(snapshot.total_mib[row, slot])
        names = [name for name, _ in held]
        if any(g.whole for _, g in held):
            assert len(held) == 1, f"whole GPU {node}/{index} shared by {names}"
        assert sum(g.vram_mib for _, g in held) <= total, f"VRAM over-committed {node}/{index}"
        replicas = int(snapshot.replicas[row, slot])
        assert sum(g.replica for _, g in held) <= max(replicas, 0), f"replicas {node}/{index}"
        used = 0
        for name, grant in held:
            if grant.mig_profile is not None:
                span = ((1 << grant.mig_slices) - 1) << grant.mig_start
                assert not used & span, f"MIG overlap on {node}/{index} ({name})"
                used |= span
    assert (snapshot.free_mib[snapshot.present] >= 0).all()
    assert (snapshot.replicas_free >= 0).all()
    assert inventory.conflicts_total == 0


def node_rows(snapshot: ClusterSnapshot) -> dict[str, tuple[Any, ...]]:
    """Per node, its GPU arrays as tuples (row numbers differ between inventories)."""
    out = {}
    for name, row in snapshot.node_index.items():
        arrays = tuple(tuple(getattr(snapshot, a)[row].tolist()) for a in GPU_ARRAYS)
        out[name] = (*arrays, int(snapshot.cpu_free[row]), int(snapshot.memory_free[row]))
    return out


def holdings_by_pod(inventory: Inventory) -> dict[str, tuple[str, Any]]:
    return {h.key.uid: (h.node, None if h.assignment is None else
                        sorted((g.index, g.mig_start, g.vram_mib, g.whole, g.replica)
                               for g in h.assignment.grants))
            for h in inventory.holdings()}
