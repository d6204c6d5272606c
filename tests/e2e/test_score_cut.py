"""The exact cut under the real kube-scheduler (docs/score-cut.md): the same pods land on the same
nodes with the cut on (the default) and off, while with it on filter leaves nodes out (so
kube-scheduler scores and prioritize receives fewer), a lone winner alone (kube-scheduler then
calls no prioritize; filter holds the GPUs); a ReplicaSet's pods (PodTopologySpread's system
defaults score them) still have a lone winner; a pod a Service selects counts the Service
(the Services watch, under the extender's own least-privilege RBAC): with two more
set-dependent plugins it puts the runner-up within reach, so no cut.

The pods are created one at a time, each after the previous one is bound, so every choice is made
on a known state; the fleet's nodes differ in price and size, so the best node is unique at each
step (the default strategy ranks idle nodes by price, then packs the partly used one).
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from localcluster import LocalCluster
from tests.e2e.gpu_helpers import (
    GPU_PROFILE_CONFIG,
    NAMESPACE,
    extender_spec,
    gpu_pod,
    wait_bound,
)

pytestmark = pytest.mark.e2e

UNTHROTTLED = ["--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
               "--enable-priority-and-fairness=false"]
FLEET = {  # node -> (GPUs, product label); T4 0.53 $/h < L4 0.80 $/h
    "t4-a": (4, "Tesla-T4"), "t4-b": (2, "Tesla-T4"), "t4-c": (8, "Tesla-T4"),
    "l4-a": (4, "NVIDIA-L4"), "l4-b": (8, "NVIDIA-L4"), "l4-c": (2, "NVIDIA-L4"),
}
SEQUENCE = [1, 1, 2, 1, 1, 2, 1, 4, 1, 2]  # GPUs per pod, one pod at a time
_SAMPLE = re.compile(
    rb'^(gpu_extender_score_cut(?:_nodes)?_total)\{(\w+)="(\w+)"\} ([0-9.e+-]+)$', re.MULTILINE)
_CALLS = re.compile(
    rb'^gpu_extender_request_duration_seconds_count\{verb="(\w+)"\} ([0-9.e+-]+)$', re.MULTILINE)
RS_PODS = 2


def _metrics(cluster: LocalCluster) -> dict[str, float]:
    with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=10) as answer:
        text = answer.read()
    out = {f"{name.decode()}{{{value.decode()}}}": float(n)
           for name, _label, value, n in _SAMPLE.findall(text) if float(n)}
    return out | {f"calls{{{verb.decode()}}}": float(n) for verb, n in _CALLS.findall(text)}


def _affine_web_pod() -> dict[str, Any]:
    """Selected by the Service ``web``, with a preferred node affinity and a preferred pod
    anti-affinity: 400 + 100 x (2 + 2) = 800 without the Service, 1,000 with it (a one point
    lead is 1,000: the runner-up is within reach only when the Service is counted)."""
    pod = gpu_pod("web-0", {"nvidia.com/gpu": 1}, labels={"app": "web"})
    pod["spec"]["affinity"] = {
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["gold"]}]}}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                              "labelSelector": {"matchLabels": {"app": "web"}}}}]}}
    return pod


def placements(config: Path | None) -> tuple[list[str], dict[str, float]]:
    """The node of each pod of ``SEQUENCE``, then of the ReplicaSet's pods, and the cut's
    metrics after them (and our calls by verb), then after a Service-selected pod (suffix
    ``+service``)."""
    with LocalCluster(GPU_PROFILE_CONFIG, extender_spec(config),
                      apiserver_args=UNTHROTTLED) as cluster:
        for name, (gpus, product) in FLEET.items():
            cluster.create_node(name, {"nvidia.com/gpu": gpus},
                                labels={"nvidia.com/gpu.product": product})
        api = cluster.api()
        api.create_namespaced_service(NAMESPACE, {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
        nodes = []
        for i, gpus in enumerate(SEQUENCE):
            api.create_namespaced_pod(NAMESPACE, gpu_pod(f"p{i}", {"nvidia.com/gpu": gpus}))
            nodes.append(wait_bound(cluster, f"p{i}", timeout_s=120))
        # a ReplicaSet with no controller manager to act on it: kube-scheduler's lister finds
        # it, so PodTopologySpread's system defaults score its pods
        apps = client.AppsV1Api(cluster.api_client())
        replicas = apps.create_namespaced_replica_set(NAMESPACE, {
            "metadata": {"name": "rs"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "rs"}},
                     "template": {"metadata": {"labels": {"app": "rs"}},
                                  "spec": {"containers": [{"name": "main",
                                                           "image": "registry.example/app:1"}]}}}})
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                 "uid": replicas.metadata.uid, "controller": True}
        for i in range(RS_PODS):
            pod = gpu_pod(f"rs-{i}", {"nvidia.com/gpu": 1}, labels={"app": "rs"})
            pod["metadata"]["ownerReferences"] = [owner]
            api.create_namespaced_pod(NAMESPACE, pod)
            nodes.append(wait_bound(cluster, f"rs-{i}", timeout_s=120))
        metrics = _metrics(cluster)
        api.create_namespaced_pod(NAMESPACE, _affine_web_pod())
        # not compared: with no cut, the in-tree plugins could tie two totals (random pick)
        wait_bound(cluster, "web-0", timeout_s=120)
        metrics |= {f"{k}+service": v for k, v in _metrics(cluster).items()}
    return nodes, metrics


def test_the_cut_changes_no_placement_and_sends_fewer_nodes(
        controlplane_binaries: object, tmp_path: Path,
        record_property: pytest.RecordProperty) -> None:
    off_config = tmp_path / "no-cut.yaml"
    off_config.write_text("apiVersion: gpu-extender.io/v1alpha1\nkind: PlatformConfig\n"
                          "scoreCut:\n  enabled: false\n")
    on_nodes, on = placements(None)
    off_nodes, off = placements(off_config)
    record_property("cut_on", on)
    record_property("cut_off", off)
    print(f"cut on: {on_nodes} {on}\ncut off: {off_nodes} {off}")
    assert on_nodes == off_nodes
    # with the cut: nodes were left out; the default's ranks give the best a one point lead,
    # more than the 400 (600 for the ReplicaSet's pods) the in-tree plugins can make up: lone
    # winners, answered alone, so kube-scheduler called no prioritize for them
    lone = on.get("gpu_extender_score_cut_total{lone_winner}", 0.0)
    assert lone >= len(SEQUENCE) // 2
    assert on.get("gpu_extender_score_cut_nodes_total{dropped}", 0.0) >= lone
    assert on.get("calls{prioritize}", 0.0) <= len(SEQUENCE) + RS_PODS - lone
    assert off.get("calls{prioritize}", 0.0) >= on.get("calls{prioritize}", 0.0) + lone
    # ... so kube-scheduler scored, and prioritize received, fewer nodes for the same pods
    assert on["gpu_extender_score_cut_nodes_total{kept}"] < \
        off["gpu_extender_score_cut_nodes_total{kept}"]
    # without it: every filter answer with more than one node passing says why, none dropped
    assert off.get("gpu_extender_score_cut_total{cut_disabled}", 0.0) >= len(SEQUENCE) // 2
    assert off.get("gpu_extender_score_cut_nodes_total{dropped}", 0.0) == 0
    # the Service-selected pod: the Services watch saw the Service, whose PodTopologySpread
    # brings the runner-up within reach: not cut (its first set-dependent reason counted)
    assert on.get("gpu_extender_score_cut_total{pod_has_preferred_node_affinity}+service",
                  0.0) >= 1
    assert on.get("gpu_extender_score_cut_total{lone_winner}+service") == lone
