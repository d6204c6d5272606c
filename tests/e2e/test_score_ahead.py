"""Scores computed ahead under the real kube-scheduler (``scheduling/speculation.py``): a
burst of one request released at once lands exactly as with ``scoring.scoreAhead: false``,
while with it on (the default) the filters take the scores computed after the previous answer
(``gpu_extender_scores_taken_ahead_total``) and with it off none is computed. The same burst
shows kube-scheduler's bodies ending with a node list filter parses once while it repeats
(``gpu_extender_node_lists_reused_total``)."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path

import pytest

from localcluster import LocalCluster
from tests.e2e.gpu_helpers import NAMESPACE, all_assignments, create_pods, gpu_cluster, gpu_pod

pytestmark = pytest.mark.e2e

FLEET = {  # node -> (GPUs, product label); T4 0.53 $/h < L4 0.80 $/h
    "t4-a": (4, "Tesla-T4"), "t4-b": (8, "Tesla-T4"), "t4-c": (8, "Tesla-T4"),
    "l4-a": (8, "NVIDIA-L4"), "l4-b": (8, "NVIDIA-L4"),
}
PODS = 30  # 30 of the 36 GPUs: every pod fits, the L4s only once the T4s are full
_COUNTER = re.compile(rb"^gpu_extender_(scores_\w+|node_lists_reused)_total ([0-9.e+-]+)$",
                      re.MULTILINE)


def _counters(cluster: LocalCluster) -> dict[str, float]:
    with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=10) as answer:
        text = answer.read()
    return {name.decode(): float(value) for name, value in _COUNTER.findall(text)}


def burst(config: Path | None) -> tuple[dict[str, list[tuple[int, ...]]], dict[str, float]]:
    """Each node's GPU sets (one per pod, sorted), and the scores-ahead counters."""
    with gpu_cluster(extender_config=config) as cluster:
        for name, (gpus, product) in FLEET.items():
            cluster.create_node(name, {"nvidia.com/gpu": gpus},
                                labels={"nvidia.com/gpu.product": product})
        time.sleep(1.0)  # the extender's node watch has them
        create_pods(cluster, [gpu_pod(f"r-{i}", {"nvidia.com/gpu": 1}) for i in range(PODS)])
        api = cluster.api()
        cluster.wait_for(
            lambda: sum(1 for p in api.list_namespaced_pod(NAMESPACE).items
                        if p.spec.node_name) == PODS or None,
            timeout_s=180, description=f"{PODS} pods to be bound")
        gpus: dict[str, list[tuple[int, ...]]] = {}
        for assignment in all_assignments(api).values():
            gpus.setdefault(assignment.node, []).append(tuple(sorted(assignment.gpu_indices)))
        return {node: sorted(sets) for node, sets in gpus.items()}, _counters(cluster)


def test_a_burst_lands_as_without_scores_ahead(controlplane_binaries: object,
                                               tmp_path: Path) -> None:
    off_config = tmp_path / "no-score-ahead.yaml"
    off_config.write_text("apiVersion: gpu-extender.io/v1alpha1\nkind: PlatformConfig\n"
                          "scoring:\n  scoreAhead: false\n")
    on, on_counters = burst(None)
    off, off_counters = burst(off_config)
    print(f"on: {on} {on_counters}\noff: {off} {off_counters}")
    assert on == off
    assert sum(len(sets) for sets in on.values()) == PODS
    # every GPU once: no pod's GPUs given twice
    assert all(len(set(sum(sets, ()))) == len(sum(sets, ())) for sets in on.values())
    assert on_counters["scores_taken_ahead"] > 0
    assert on_counters["scores_ahead"] >= on_counters["scores_taken_ahead"]
    assert off_counters["scores_ahead"] == off_counters["scores_taken_ahead"] == 0
    # kube-scheduler's own encoding ends each body with its node list, and the list repeats
    # until a node fills: filter parsed only the pod of those bodies (server/wire.py)
    assert on_counters["node_lists_reused"] > 0
