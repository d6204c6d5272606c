"""The pod template of a workload, judged as its pods will be.

A Deployment whose pods the extender would refuse is accepted by the API server, and its
ReplicaSet then fails to create pods, or creates pods that wait for ever: the user sees it in
`kubectl describe rs`, minutes later, if at all. /validate sees the workload at `kubectl apply`
and answers at once, with a warning (``admission.workloads: warn``, the default) or a refusal
(``refuse``), naming the field inside the template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.kube import objects

# kind -> the path of its pod template
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def template_pod(kind: str, workload: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The pod a workload's template makes (in the workload's namespace) and the template's
    path for messages; ``None`` when ``kind`` has no pod template or the template is missing."""
    path = TEMPLATE_PATHS.get(kind)
    if path is None:
        return None
    node: Any = workload
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        return None
    metadata = {**objects.meta(node), "namespace": objects.namespace(workload),
                "name": f"{objects.name(workload)}-template"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": node.get("spec")}, ".".join(path)
