"""Requests summed as kube-scheduler sums them: ``k8s.io/component-helpers/resource/helpers.go``
``PodRequests`` / ``AggregateContainerRequests`` (and its ``helpers_test.go`` cases)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.kube.filters.facts import pod_requests

JSON = dict[str, Any]
MI = 2**20


def c(cpu: str | None = None, memory: str | None = None, *, limits: JSON | None = None,
      sidecar: bool = False) -> JSON:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    out: JSON = {"name": "c", "resources": {"requests": requests, "limits": limits or {}}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


@pytest.mark.parametrize(("spec", "expected"), [
    # two containers add up: 100m + 200m, 64Mi + 64Mi
    ({"containers": [c("100m", "64Mi"), c("200m", "64Mi")]},
     {"cpu": 300, "memory": 128 * MI}),
    # a limit without a request requests the limit (API defaulting)
    ({"containers": [c(limits={"cpu": "2", "nvidia.com/gpu": "1"})]},
     {"cpu": 2000, "nvidia.com/gpu": 1}),
    # an init container runs alone: max(300m containers, 1 core init) = 1 core
    ({"containers": [c("300m")], "initContainers": [c("1")]}, {"cpu": 1000}),
    # a smaller init container changes nothing: max(300m, 100m)
    ({"containers": [c("300m")], "initContainers": [c("100m")]}, {"cpu": 300}),
    # a sidecar adds to the containers: 300m + 200m = 500m; the init container after it
    # runs beside it: 400m + 200m = 600m > 500m
    ({"containers": [c("300m")], "initContainers": [c("200m", sidecar=True), c("400m")]},
     {"cpu": 600}),
    # an init container before the sidecar does not run beside it: max(500m, 400m)
    ({"containers": [c("300m")], "initContainers": [c("400m"), c("200m", sidecar=True)]},
     {"cpu": 500}),
    # overhead (RuntimeClass) is added after the max: 1 core + 250m
    ({"containers": [c("300m")], "initContainers": [c("1")], "overhead": {"cpu": "250m"}},
     {"cpu": 1250}),
    # pod-level requests replace the containers' cpu and memory, not other resources
    ({"containers": [c("300m", limits={"nvidia.com/gpu": "2"})],
      "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}},
     {"cpu": 4000, "memory": 1024 * MI, "nvidia.com/gpu": 2}),
    # millicores round up as Quantity.MilliValue does: 0.0001 -> 1m
    ({"containers": [c("0.0001")]}, {"cpu": 1}),
    # nothing requested: nothing counted
    ({"containers": [c()]}, {}),
])
def test_pod_requests(spec: JSON, expected: dict[str, int]) -> None:
    assert pod_requests({"spec": spec}) == expected
