"""kwok (sigs.k8s.io/kwok) fake nodes for the local cluster: a pod lifecycle without a kubelet.

Plain localcluster nodes are API objects only: a pod bound to one stays Pending, and a pod
deleted gracefully stays Terminating for ever (nothing confirms the kill), so preemption never
completes. kwok watches the nodes labelled ``KWOK_LABEL`` and plays their kubelet with the stages
in ``kwok_stages.yaml``: node-initialize (Ready, addresses), pod-ready (Running, a pod IP) and
pod-delete (a terminating pod is removed).

    with LocalCluster(config, extender) as cluster:
        kwok = Kwok.start(cluster)                      # builds kwok once (hack/build-kwok.sh)
        kwok.create_node(cluster, "gpu-0", {"nvidia.com/gpu": 2}, labels={...})
        kwok.wait_running(cluster, "default", "pod-0")

Reusable by any e2e test (the ``kwok`` fixture in tests/e2e/conftest.py): other nodes of the same
cluster keep their plain behaviour.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localcluster.binaries import REPO_ROOT, built_by
from localcluster.nodes import fake_node_manifest
from localcluster.process import ManagedProcess

if TYPE_CHECKING:
    from localcluster.cluster import LocalCluster

BUILD_SCRIPT = REPO_ROOT / "hack" / "build-kwok.sh"
STAGES = Path(__file__).resolve().parent / "kwok_stages.yaml"
OVERRIDE_ENV = "GPU_EXTENDER_KWOK_BIN"
KWOK_LABEL = "gpu-extender.io/kwok"
"""Nodes with this label set to ``true`` are managed by kwok."""


def find_kwok() -> Path:
    """$GPU_EXTENDER_KWOK_BIN, else the cached build of the pinned version (building it first:
    minutes, once per machine)."""
    override = os.environ.get(OVERRIDE_ENV)
    return Path(override) if override else built_by(BUILD_SCRIPT)


def kwok_command(binary: Path, kubeconfig: Path, stages: Path = STAGES) -> list[str]:
    return [str(binary), f"--kubeconfig={kubeconfig}", "--manage-all-nodes=false",
            f"--manage-nodes-with-label-selector={KWOK_LABEL}=true",
            "--cidr=10.0.0.0/24", "--node-ip=10.0.0.1", "--node-port=0",
            "-c", str(stages)]


@dataclass
class Kwok:
    process: ManagedProcess

    @classmethod
    def start(cls, cluster: LocalCluster, binary: Path | None = None) -> Kwok:
        """Run kwok against ``cluster`` (admin credentials); stopped with the cluster."""
        command = kwok_command(binary or find_kwok(), cluster.kubeconfig("admin"))
        return cls(cluster.start_process("kwok", command))

    @staticmethod
    def node_manifest(name: str, extended_resources: Mapping[str, int | str], *,
                      labels: Mapping[str, str] = {}, annotations: Mapping[str, str] = {},
                      taints: Sequence[Mapping[str, str]] = (), cpu: str = "64",
                      memory: str = "512Gi") -> dict[str, Any]:
        """A Node kwok will manage: the fake node without its Ready condition (kwok's
        node-initialize sets it, keeping capacity and allocatable as given)."""
        manifest = fake_node_manifest(
            name, extended_resources=extended_resources,
            labels={**labels, KWOK_LABEL: "true", "type": "kwok"},
            annotations={**annotations, "kwok.x-k8s.io/node": "fake"},
            taints=taints, cpu=cpu, memory=memory)
        manifest["status"].pop("conditions")
        return manifest

    def create_node(self, cluster: LocalCluster, name: str,
                    extended_resources: Mapping[str, int | str], **kwargs: Any) -> None:
        cluster.api().create_node(self.node_manifest(name, extended_resources, **kwargs))

    @staticmethod
    def ready(cluster: LocalCluster, name: str) -> bool:
        node = cluster.api().read_node(name)
        return any(c.type == "Ready" and c.status == "True"
                   for c in (node.status.conditions or []))

    @staticmethod
    def running(cluster: LocalCluster, namespace: str, name: str) -> bool:
        pod = cluster.api().read_namespaced_pod(name, namespace)
        return bool(pod.status.phase == "Running")
