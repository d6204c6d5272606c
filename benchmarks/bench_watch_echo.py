"""The watch's work per bound pod: thread CPU of one MODIFIED event (the line parsed and
applied) for pods the extender bound, on 1,000 T4x8 nodes (issue 22e: a Binding's echo is read
from the pod's pending decode, ``extender/sync/echo.py``).

    .venv/bin/python benchmarks/bench_watch_echo.py [--pods 800]
    PYTHONPATH=/work/base .venv/bin/python benchmarks/bench_watch_echo.py   # another tree

Each pod is first seen pending (ADDED), then held as the bind leaves it (``assume`` +
``finish_binding``), then its Binding's echo arrives: what the API server sends after our
Binding (node, the extender's annotations, a new resourceVersion and managedFields entry, the
PodScheduled condition).
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

import orjson

from extender.apiserver.binder import assignment_annotations
from extender.inventory.store import HoldingState, Inventory
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from extender.platform import load_platform
from extender.sync.apply import InventoryApplier
from extender.sync.stream import WatchCursor

NODES = 1000


def _node(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"n{i}", "uid": f"node-{i}", "resourceVersion": "1",
                         "labels": {"nvidia.com/gpu.product": "Tesla-T4",
                                    "nvidia.com/gpu.count": "8",
                                    "nvidia.com/gpu.memory": "15360"}},
            "status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "256Gi"},
                       "allocatable": {"nvidia.com/gpu": "8", "cpu": "64",
                                       "memory": "256Gi"}}}


def _pending(i: int) -> dict[str, Any]:
    """A pending pod as the API server sends it (bookkeeping fields included)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"uid-{i}",
                         "resourceVersion": str(1000 + i),
                         "creationTimestamp": "2026-12-02T04:00:00Z",
                         "managedFields": [{"manager": "python", "operation": "Update",
                                            "apiVersion": "v1", "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:spec": {"f:containers": {}}}}]},
            "spec": {"schedulerName": "gpu-scheduler", "restartPolicy": "Always",
                     "containers": [{"name": "c", "image": "pause",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"},
                                                   "requests": {"nvidia.com/gpu": "1"}},
                                     "volumeMounts": [{"name": "token",
                                                       "mountPath": "/var/run/secrets"}]}],
                     "tolerations": [{"key": "node.kubernetes.io/not-ready",
                                      "operator": "Exists", "effect": "NoExecute",
                                      "tolerationSeconds": 300}],
                     "volumes": [{"name": "token", "projected": {"sources": [
                         {"serviceAccountToken": {"expirationSeconds": 3607,
                                                  "path": "token"}}]}}]},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}


def _echo(pod: dict[str, Any], assignment: Assignment) -> dict[str, Any]:
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = assignment.node
    bound["metadata"]["annotations"] = assignment_annotations(assignment)
    bound["metadata"]["resourceVersion"] = str(int(pod["metadata"]["resourceVersion"]) + 5000)
    bound["metadata"]["managedFields"].append({"manager": "kube-scheduler",
                                               "operation": "Update",
                                               "subresource": "binding"})
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    return bound


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=800)
    args = parser.parse_args()
    platform = load_platform()
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    applier.replace_nodes([_node(i) for i in range(NODES)])
    lines = []
    for i in range(args.pods):
        pod = _pending(i)
        applier.pod_event("ADDED", pod)
        assignment = Assignment(f"n{i % NODES}", RequestKind.WHOLE,
                                (GpuGrant(i // NODES, 15360, whole=True),), "t4")
        inventory.assume(PodKey("default", f"p{i}", f"uid-{i}"), assignment, ttl=None)
        inventory.finish_binding(f"uid-{i}")
        lines.append(orjson.dumps({"type": "MODIFIED", "object": _echo(pod, assignment)}))
    cursor = WatchCursor("0")
    started = time.thread_time_ns()
    for line in lines:
        step = cursor.interpret(line)
        applier.pod_event(step.event_type, step.obj)
    spent = time.thread_time_ns() - started
    observed = sum(1 for i in range(args.pods)
                   if (h := inventory.holding(f"uid-{i}")) is not None
                   and h.state is HoldingState.OBSERVED)
    assert observed == args.pods, f"{observed} of {args.pods} observed"
    print(f"{spent / args.pods / 1000:.0f} us CPU per bound pod's watch event "
          f"({args.pods} pods, line parse included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
