"""Fake Node objects: the scheduler only needs the API object, no kubelet behind it."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any


def fake_node_manifest(
    name: str,
    *,
    extended_resources: Mapping[str, int | str],
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    taints: Sequence[Mapping[str, str]],
    cpu: str,
    memory: str,
) -> dict[str, Any]:
    """A Ready Node whose status is set at create time.

    The apiserver accepts all fields, status included, on Node *create*; afterwards status can
    only change through the /status subresource. ``pods`` must be allocatable or
    NodeResourcesFit rejects every pod with "Too many pods".
    """
    resources = {
        "cpu": cpu,
        "memory": memory,
        "pods": "110",
        **{key: str(value) for key, value in extended_resources.items()},
    }
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **labels,
            },
            "annotations": dict(annotations),
        },
        "spec": {"taints": [dict(taint) for taint in taints]},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "fake node created by localcluster (no kubelet)",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        },
    }
