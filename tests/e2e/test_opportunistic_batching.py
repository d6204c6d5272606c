"""OpportunisticBatching (beta, on by default since 1.35) against our placements.

With the gate on, kube-scheduler may try the next pod of the same signature only on the node
its batch hinted, and bind it there without calling prioritize. This test releases one burst
of identical one-GPU pods onto the same priced fleet twice, with the gate on (the default)
and off, and checks that the placements are the same (how many pods each node type got, node
by node) and that no GPU is given twice, and records what the gate does to our call counts.
"""

from __future__ import annotations

import re
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from localcluster import LocalCluster
from tests.e2e.gpu_helpers import (
    GPU_PROFILE_CONFIG,
    NAMESPACE,
    all_assignments,
    extender_spec,
    gpu_pod,
    over_commitments,
)

pytestmark = pytest.mark.e2e

PODS = 14
UNTHROTTLED = ["--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
               "--enable-priority-and-fairness=false"]
_CALLS = re.compile(
    rb'^gpu_extender_request_duration_seconds_count\{verb="(\w+)"\} ([0-9.e+-]+)$',
    re.MULTILINE)
_BATCH = re.compile(rb"^(scheduler_batch\w*)(\{[^}]*\})? ([0-9.e+-]+)$", re.MULTILINE)

VRAM_MIB = {"t4": 16384, "l4": 24576}
FLEET = {  # node -> (GPUs, product label); T4 0.53 $/h < L4 0.80 $/h
    "t4-a": (4, "Tesla-T4"), "t4-b": (4, "Tesla-T4"), "t4-c": (2, "Tesla-T4"),
    "l4-a": (4, "NVIDIA-L4"), "l4-b": (4, "NVIDIA-L4"),
}


def burst(batching: bool) -> tuple[list[tuple[str, int]], dict[str, float], dict[str, float]]:
    """(per node type, the sorted pod counts of its nodes), our calls by verb, the
    scheduler's batch metrics."""
    gate = [] if batching else ["--feature-gates=OpportunisticBatching=false"]
    with LocalCluster(GPU_PROFILE_CONFIG, extender_spec(), apiserver_args=UNTHROTTLED,
                      scheduler_args=gate) as cluster:
        for name, (gpus, product) in FLEET.items():
            cluster.create_node(name, {"nvidia.com/gpu": gpus},
                                labels={"nvidia.com/gpu.product": product})
        api = cluster.api()
        with ThreadPoolExecutor(8) as pool:  # at once: a queue of pods of one signature
            list(pool.map(lambda i: api.create_namespaced_pod(
                NAMESPACE, gpu_pod(f"same-{i}", {"nvidia.com/gpu": 1})), range(PODS)))
        cluster.wait_for(lambda: len(all_assignments(api)) == PODS, timeout_s=180,
                         description=f"{PODS} pods bound")
        assignments = all_assignments(api)
        assert over_commitments(assignments, {n: VRAM_MIB[n.split("-")[0]] for n in FLEET}) == []
        per_node = Counter(a.node for a in assignments.values())
        shape = sorted((name.split("-")[0], per_node[name]) for name in FLEET)
        calls = {verb.decode(): float(n) for verb, n in _CALLS.findall(
            _get(f"{cluster.extender_url}/metrics"))}
        batch = {(name + labels).decode(): float(value) for name, labels, value in
                 _BATCH.findall(_get(f"{cluster.scheduler_url}/metrics"))}
    return shape, calls, batch


def _get(url: str) -> bytes:
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, timeout=10, context=context) as answer:
        data: bytes = answer.read()
    return data


def test_placements_with_opportunistic_batching_equal_those_without(
        controlplane_binaries: object, record_property: pytest.RecordProperty) -> None:
    on_shape, on_calls, on_batch = burst(batching=True)
    off_shape, off_calls, off_batch = burst(batching=False)
    record_property("calls_on", on_calls)
    record_property("calls_off", off_calls)
    record_property("batch_metrics_on", on_batch)
    print(f"batching on: {on_shape} calls {on_calls} batch {on_batch}")
    print(f"batching off: {off_shape} calls {off_calls} batch {off_batch}")
    # 14 pods, cheapest first: the three T4 nodes (4 + 4 + 2 = 10 GPUs) fill, then 4 on L4s
    assert on_shape == off_shape
    assert sum(n for kind, n in on_shape if kind == "t4") == 10
    assert on_calls.get("bind") == off_calls.get("bind") == PODS
