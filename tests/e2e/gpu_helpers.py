"""Helpers for end-to-end tests with the real gpu-extender under a real kube-scheduler."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes.client import CoreV1Api

from extender.kube.annotations import decode_assignment, visible_devices
from extender.model import ANNOTATION_ASSIGNED, ANNOTATION_VISIBLE_DEVICES, Assignment
from localcluster import ExtenderSpec, LocalCluster
from localcluster.binaries import REPO_ROOT

GPU_PROFILE_CONFIG = REPO_ROOT / "scheduler-config" / "gpu-scheduler-profile.yaml"
DEFAULT_PROFILE_CONFIG = REPO_ROOT / "scheduler-config" / "default-scheduler-with-extender.yaml"
GPU_SCHEDULER = "gpu-scheduler"
NAMESPACE = "default"


def extender_spec(config: Path | None = None) -> ExtenderSpec:
    def command(port: int) -> list[str]:
        # the shipped configs count gpu-memory/gpu-milli at node level: the extender
        # advertises them (scheduler-config/README.md)
        args = [sys.executable, "-m", "extender", "serve", "--host", "127.0.0.1",
                "--port", str(port), "--publish-node-capacity",
                "--leader-namespace", "kube-system"]
        if config is not None:
            args += ["--config", str(config)]
        return args

    return ExtenderSpec(command, cwd=REPO_ROOT)


@contextmanager
def gpu_cluster(scheduler_config: Path = GPU_PROFILE_CONFIG,
                extender_config: Path | None = None) -> Iterator[LocalCluster]:
    with LocalCluster(scheduler_config, extender_spec(extender_config),
                      apiserver_args=["--max-requests-inflight=0",
                                      "--max-mutating-requests-inflight=0",
                                      "--enable-priority-and-fairness=false"]) as cluster:
        yield cluster


def gpu_pod(name: str, limits: Mapping[str, int | str], *, labels: Mapping[str, str] = {},
            annotations: Mapping[str, str] = {}, node_selector: Mapping[str, str] = {},
            scheduler: str = GPU_SCHEDULER) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "registry.example/app:1",
                        "resources": {"limits": {k: str(v) for k, v in limits.items()}}}],
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": dict(labels),
                         "annotations": dict(annotations)},
            "spec": spec}


def create_pods(cluster: LocalCluster, pods: list[dict[str, Any]]) -> None:
    api = cluster.api()
    for pod in pods:
        api.create_namespaced_pod(NAMESPACE, pod)


def pending_message(cluster: LocalCluster, name: str) -> str:
    for event in reversed(cluster.events_for_pod(NAMESPACE, name)):
        if event.reason == "FailedScheduling":
            return str(event.message or event.note or "")
    return ""


def wait_bound(cluster: LocalCluster, name: str, timeout_s: float = 60.0) -> str:
    api = cluster.api()
    node: str = cluster.wait_for(
        lambda: api.read_namespaced_pod(name, NAMESPACE).spec.node_name,
        timeout_s=timeout_s, description=f"pod {name} to be bound")
    return node


def wait_rejected(cluster: LocalCluster, name: str, timeout_s: float = 60.0) -> str:
    message: str = cluster.wait_for(lambda: pending_message(cluster, name),
                                    timeout_s=timeout_s,
                                    description=f"a FailedScheduling event for {name}")
    assert not cluster.api().read_namespaced_pod(name, NAMESPACE).spec.node_name
    return message


def assignment(api: CoreV1Api, name: str) -> Assignment:
    pod = api.read_namespaced_pod(name, NAMESPACE)
    annotations = pod.metadata.annotations or {}
    assert ANNOTATION_ASSIGNED in annotations, f"{name} has no assigned annotation"
    assert ANNOTATION_VISIBLE_DEVICES in annotations
    result = decode_assignment(annotations[ANNOTATION_ASSIGNED])
    assert result.node == pod.spec.node_name
    assert annotations[ANNOTATION_VISIBLE_DEVICES] == visible_devices(result)
    return result


def all_assignments(api: CoreV1Api) -> dict[str, Assignment]:
    out = {}
    for pod in api.list_namespaced_pod(NAMESPACE).items:
        raw = (pod.metadata.annotations or {}).get(ANNOTATION_ASSIGNED)
        if raw is not None and pod.spec.node_name:
            out[pod.metadata.name] = decode_assignment(raw)
    return out


def over_commitments(assignments: Mapping[str, Assignment],
                     gpu_memory: Mapping[str, int]) -> list[str]:
    """Every violation of the per-GPU invariants in a set of bound pods' annotations.

    ``gpu_memory``: node name -> VRAM per GPU (MiB). Whole GPUs are never shared, VRAM held on a
    GPU never exceeds its memory, MIG instances never overlap.
    """
    whole: dict[tuple[str, int], list[str]] = defaultdict(list)
    vram: dict[tuple[str, int], int] = defaultdict(int)
    slots: dict[tuple[str, int], int] = defaultdict(int)
    users: dict[tuple[str, int], list[str]] = defaultdict(list)
    problems = []
    for pod, result in assignments.items():
        for grant in result.grants:
            key = (result.node, grant.index)
            users[key].append(pod)
            vram[key] += grant.vram_mib
            if grant.whole:
                whole[key].append(pod)
            if grant.mig_profile is not None:
                span = ((1 << grant.mig_slices) - 1) << grant.mig_start
                if slots[key] & span:
                    problems.append(f"{key}: MIG overlap ({pod})")
                slots[key] |= span
    for key, holders in whole.items():
        if len(users[key]) > 1:
            problems.append(f"{key}: whole GPU shared by {users[key]} (whole: {holders})")
    for key, held in vram.items():
        if held > gpu_memory[key[0]]:
            problems.append(f"{key}: {held} MiB held > {gpu_memory[key[0]]} MiB")
    return problems


def make_priced_fleet(cluster: LocalCluster) -> None:
    """t4 (0.53 $/h) < l4 (0.80) < a100 (protected) < h100 (protected), two GPUs per cheap
    node."""
    cluster.create_node("t4-0", {"nvidia.com/gpu": 2},
                        labels={"nvidia.com/gpu.product": "Tesla-T4"})
    cluster.create_node("l4-0", {"nvidia.com/gpu": 2},
                        labels={"nvidia.com/gpu.product": "NVIDIA-L4"})
    cluster.create_node("a100-0", {"nvidia.com/gpu": 8},
                        labels={"cloud.google.com/gke-accelerator": "nvidia-a100-80gb"})
    cluster.create_node("h100-0", {"nvidia.com/gpu": 8},
                        labels={"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"})
