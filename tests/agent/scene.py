"""Builders for a node the agent looks at: NVML fixture GPUs, pods with assignments and
container statuses, and the /proc cgroup files that put each process in its container."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from extender.kube.annotations import encode_assignment
from extender.model import ANNOTATION_ASSIGNED, Assignment


def uid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def cid(n: int) -> str:
    return f"{n:064x}"


@dataclass
class Scene:
    root: Path
    node: str = "gpu-node"
    gpus: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    def gpu(self, index: int, name: str = "NVIDIA L4", memory: int = 23034,
            **extra: Any) -> dict[str, Any]:
        entry = {"index": index, "uuid": f"GPU-{index:04d}", "name": name,
                 "memoryTotalMiB": memory, "processes": [], **extra}
        self.gpus.append(entry)
        return entry

    def pod(self, n: int, name: str, assignment: Assignment | None,
            containers: tuple[str, ...] = ("main",), *, gpu: bool = True) -> dict[str, Any]:
        """``gpu``: the containers ask for ``nvidia.com/gpu`` (else the pod is a CPU pod)."""
        annotations = {ANNOTATION_ASSIGNED: encode_assignment(assignment)} if assignment else {}
        resources = {"limits": {"nvidia.com/gpu": "1"}} if gpu else {}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "ml", "uid": uid(n),
                            "annotations": annotations},
               "spec": {"nodeName": self.node,
                        "containers": [{"name": c, "image": "x", "resources": resources}
                                       for c in containers]},
               "status": {"phase": "Running", "containerStatuses": [
                   {"name": c, "containerID": f"containerd://{cid(n * 16 + i)}"}
                   for i, c in enumerate(containers)]}}
        self.pods.append(pod)
        return pod

    def process(self, device: dict[str, Any], pid: int, pod: int, used_mib: int,
                container: int = 0) -> None:
        device.setdefault("processes", []).append({"pid": pid, "usedMemoryMiB": used_mib})
        (self.root / "proc" / str(pid)).mkdir(parents=True, exist_ok=True)
        (self.root / "proc" / str(pid) / "cgroup").write_text(
            f"0::/kubepods/burstable/pod{uid(pod)}/{cid(pod * 16 + container)}\n")

    def write(self) -> tuple[Path, Path, Path]:
        """(fixture, pods file, proc root)."""
        fixture = self.root / "fixture.json"
        fixture.write_bytes(orjson.dumps({"driverVersion": "570", "gpus": self.gpus}))
        pods = self.root / "pods.json"
        pods.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": self.pods}))
        (self.root / "proc").mkdir(exist_ok=True)
        return fixture, pods, self.root / "proc"
