"""The workstation commands print the books' warnings with their fields (which pod, which
node), not the bare message Python prints for an unconfigured logger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from extender.cli import main

P = pytest.param


def t4_with_two_one_gpu_pods() -> dict[str, Any]:
    """One T4 (1 GPU) and two running pods bound to it asking 1 GPU each, no annotation: the
    second one's GPU cannot be inferred (1 GPU, 1 taken) and is not counted."""
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "t4-0", "uid": "u-t4",
                         "labels": {"nvidia.com/gpu.product": "Tesla-T4",
                                    "nvidia.com/gpu.count": "1"}},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": "True"}]}}

    def pod(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "ml", "uid": f"u-{name}"},
                "spec": {"nodeName": "t4-0", "containers": [
                    {"name": "c", "image": "x",
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                "status": {"phase": "Running"}}

    return {"apiVersion": "v1", "kind": "List", "items": [node, pod("a"), pod("b")]}


@pytest.mark.parametrize("command", [
    P(["inspect"], id="inspect"),
    P(["explain", "ml/a"], id="explain"),
    P(["what-if", "--pods", "PODS"], id="what-if"),
])
def test_a_warning_names_its_pod_and_node(command: list[str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_bytes(orjson.dumps(t4_with_two_one_gpu_pods()))
    pods = tmp_path / "pod.yaml"
    pods.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: ml}\n"
                    "spec:\n  containers: [{name: c, image: x}]\n")
    argv = [str(pods) if a == "PODS" else a for a in command]
    assert main([*argv, "--cluster-file", str(cluster)]) == 0
    err = capsys.readouterr().err
    warning = next(line for line in err.splitlines() if "not counted" in line)
    assert "warning" in warning and "pod=ml/b" in warning and "node=t4-0" in warning
