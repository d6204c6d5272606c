"""Bursts and churn: many pods at once, an extender restart in the middle, nodes coming and
going. The invariants are checked on what the API holds (the pods' assigned annotations)."""

from __future__ import annotations

import threading
import time

import pytest

from localcluster import LocalCluster
from tests.e2e.gpu_helpers import (
    NAMESPACE,
    all_assignments,
    create_pods,
    gpu_cluster,
    gpu_pod,
    over_commitments,
    wait_bound,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

T4_MIB = 16384
L4_MIB = 24576


def make_fleet(cluster: LocalCluster, nodes: int) -> dict[str, int]:
    """``nodes`` nodes, alternating 4x T4 and 4x L4; returns node -> VRAM per GPU."""
    memory = {}
    for i in range(nodes):
        if i % 2:
            name, product, mib = f"l4-{i}", "NVIDIA-L4", L4_MIB
        else:
            name, product, mib = f"t4-{i}", "Tesla-T4", T4_MIB
        cluster.create_node(name, {"nvidia.com/gpu": 4},
                            labels={"nvidia.com/gpu.product": product})
        memory[name] = mib
    return memory


def burst_pods(count: int, prefix: str = "b") -> list[dict[str, object]]:
    """A mix: whole GPUs (1 or 2), 4Gi and 8Gi VRAM shares, quarter-GPU fractions."""
    shapes: list[dict[str, int | str]] = [
        {"nvidia.com/gpu": 1}, {"gpu-extender.io/gpu-memory": "4Gi"},
        {"gpu-extender.io/gpu-memory": "8Gi"}, {"nvidia.com/gpu": 2},
        {"gpu-extender.io/gpu-milli": 250},
    ]
    return [gpu_pod(f"{prefix}-{i}", shapes[i % len(shapes)]) for i in range(count)]


def settle(cluster: LocalCluster, names: list[str], timeout_s: float) -> dict[str, str]:
    """Wait until no pod changes for a while; returns pod -> node for the bound ones."""
    api = cluster.api()
    deadline = time.monotonic() + timeout_s
    last: dict[str, str] = {}
    stable_since = time.monotonic()
    while time.monotonic() < deadline:
        bound = {p.metadata.name: p.spec.node_name for p in api.list_namespaced_pod(NAMESPACE).items
                 if p.spec.node_name and p.metadata.name in names}
        if bound != last:
            last, stable_since = bound, time.monotonic()
        elif len(bound) == len(names) or time.monotonic() - stable_since > 15:
            return bound
        time.sleep(0.5)
    return last


def capacity_units(nodes: int) -> float:
    return nodes * 4.0


def test_a_burst_of_200_pods_on_50_nodes_never_over_commits_a_gpu(
        controlplane_binaries: object) -> None:
    # 200 pods ask for 200/5 * (1 + 2 + 0.25 + 4/16..4/24 + 8/16..8/24) ~ 175 GPU-equivalents
    # against 200 GPUs: everything fits, so every pod must end up bound.
    with gpu_cluster() as cluster:
        memory = make_fleet(cluster, 50)
        time.sleep(1.0)
        pods = burst_pods(200)
        names = [str(p["metadata"]["name"]) for p in pods]  # type: ignore[index]
        create_pods(cluster, pods)
        bound = settle(cluster, names, timeout_s=240)
        assignments = all_assignments(cluster.api())
        assert over_commitments(assignments, memory) == []
        assert set(bound) == set(names), f"unbound: {sorted(set(names) - set(bound))[:10]}"
        assert set(assignments) == set(names)


def test_restarting_the_extender_mid_burst_causes_no_double_allocation(
        controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        memory = make_fleet(cluster, 20)
        time.sleep(1.0)
        pods = burst_pods(100, prefix="r")
        names = [str(p["metadata"]["name"]) for p in pods]  # type: ignore[index]
        create_pods(cluster, pods[:50])
        wait_bound(cluster, "r-0")
        cluster.restart_extender()
        create_pods(cluster, pods[50:])
        settle(cluster, names, timeout_s=240)
        assert over_commitments(all_assignments(cluster.api()), memory) == []


def test_nodes_added_and_deleted_while_scheduling_are_followed(
        controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        memory = make_fleet(cluster, 4)
        time.sleep(1.0)
        stop = threading.Event()

        def churn() -> None:
            # Add 8 nodes one by one while pods arrive, and delete two of the originals.
            for i in range(4, 12):
                if stop.is_set():
                    return
                name = f"l4-{i}" if i % 2 else f"t4-{i}"
                cluster.create_node(name, {"nvidia.com/gpu": 4},
                                    labels={"nvidia.com/gpu.product":
                                            "NVIDIA-L4" if i % 2 else "Tesla-T4"})
                memory[name] = L4_MIB if i % 2 else T4_MIB
                time.sleep(0.3)

        worker = threading.Thread(target=churn)
        worker.start()
        pods = [gpu_pod(f"c-{i}", {"nvidia.com/gpu": 1}) for i in range(40)]
        create_pods(cluster, pods)
        worker.join()
        cluster.delete_node("t4-0")
        cluster.delete_node("l4-1")
        late = [gpu_pod(f"late-{i}", {"nvidia.com/gpu": 1}) for i in range(8)]
        create_pods(cluster, late)
        names = [f"c-{i}" for i in range(40)] + [f"late-{i}" for i in range(8)]
        bound = settle(cluster, names, timeout_s=180)
        # 48 one-GPU pods, 12 nodes x 4 GPUs = 48 GPUs, minus 8 on the deleted nodes: the late
        # pods must never land on a deleted node, and nothing is over-committed.
        for i in range(8):
            assert bound.get(f"late-{i}") not in ("t4-0", "l4-1")
        assignments = all_assignments(cluster.api())
        assert over_commitments(assignments, memory) == []
        assert all(bound.get(f"c-{i}") for i in range(40))
