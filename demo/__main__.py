"""Run the demo: `python -m demo` (or `make demo`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import yaml

from demo.fleet import FLEET, create_fleet
from demo.report import pod_row, render
from extender.platform import load_platform
from localcluster import ExtenderSpec, LocalCluster

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "manifests" / "examples"
SCHEDULER_CONFIG = REPO / "scheduler-config" / "gpu-scheduler-profile.yaml"
NAMESPACE = "default"


def extender_command(port: int) -> list[str]:
    # the scheduler config counts gpu-memory/gpu-milli at node level: the extender publishes them
    return [sys.executable, "-m", "extender", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--publish-node-capacity",
            "--leader-namespace", "kube-system"]


def load_examples() -> list[dict[str, Any]]:
    pods = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        pods += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return pods


def pending_reason(cluster: LocalCluster, name: str) -> str:
    for event in reversed(cluster.events_for_pod(NAMESPACE, name)):
        if event.reason == "FailedScheduling":
            return str(event.message or event.note or "")
    return ""


def settled(cluster: LocalCluster, names: list[str]) -> bool:
    """Every pod is bound or has a FailedScheduling event."""
    api = cluster.api()
    for name in names:
        pod = api.read_namespaced_pod(name, NAMESPACE)
        if not pod.spec.node_name and not pending_reason(cluster, name):
            return False
    return True


def main() -> int:
    platform = load_platform()
    examples = load_examples()
    names = [pod["metadata"]["name"] for pod in examples]
    started = time.monotonic()
    print("Starting etcd, kube-apiserver, gpu-extender and kube-scheduler ...", flush=True)
    with LocalCluster(SCHEDULER_CONFIG, ExtenderSpec(extender_command, cwd=REPO)) as cluster:
        print(f"  control plane up in {time.monotonic() - started:.1f}s; creating the fleet:")
        for node in FLEET:
            print(f"    {node.name:14s} {node.description}")
        create_fleet(cluster)
        time.sleep(1.0)  # let the extender's node watch see the fleet before the first pod
        api = cluster.api()
        print(f"Submitting {len(examples)} example pods from manifests/examples/ ...",
              flush=True)
        for pod in examples:
            api.create_namespaced_pod(NAMESPACE, pod)
        cluster.wait_for(lambda: settled(cluster, names), timeout_s=90,
                         description="every example pod bound or rejected")
        client = cluster.api_client()
        rows = []
        for name in names:
            pod = client.sanitize_for_serialization(api.read_namespaced_pod(name, NAMESPACE))
            rows.append(pod_row(platform, pod, pending_reason(cluster, name)))
    print()
    print(render(rows))
    print(f"\nDone in {time.monotonic() - started:.1f}s; the control plane is torn down.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
