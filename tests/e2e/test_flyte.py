"""A Flyte-labelled fleet under the real kube-scheduler, with task pods as flytepropeller writes
them.

Node labels: flytepropeller's default ``gpu-device-node-label`` and
``gpu-partition-size-node-label`` (flyteplugins/go/tasks/pluginmachinery/flytek8s/config/
config.go: ``k8s.amazonaws.com/accelerator``, ``k8s.amazonaws.com/gpu-partition-size``), with
the device strings flytekit's constants write (flytekit/extras/accelerators.py: A100 ->
``nvidia-tesla-a100``, T4 -> ``nvidia-tesla-t4``).

Pods: flytepropeller's ApplyGPUNodeSelectors (flytek8s/pod_helper.go, as summarized in
../shared/reference/anchors-2026-12.md section 6): a required node affinity term
``<device-label> In [<device>]`` and the toleration ``<device-label>=<device>:NoSchedule``; for
``A100.partition_1g_5gb`` also ``<partition-label> In [1g.5gb]`` (and its toleration); for
``A100.unpartitioned()`` ``<partition-label> DoesNotExist``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.gpu_helpers import (
    assignment,
    create_pods,
    gpu_cluster,
    gpu_pod,
    wait_bound,
)

pytestmark = pytest.mark.e2e
DEVICE = "k8s.amazonaws.com/accelerator"
PARTITION = "k8s.amazonaws.com/gpu-partition-size"


def flyte_task_pod(name: str, device: str | None, partition: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The pod flytepropeller writes for ``@task(accelerator=..., requests=Resources(gpu=1))``
    (the scheduler name comes from its default pod template, see docs/flyte.md)."""
    pod = gpu_pod(name, {"nvidia.com/gpu": 1})
    if device is None:
        return pod
    term: list[dict[str, Any]] = [{"key": DEVICE, "operator": "In", "values": [device]}]
    tolerations = [{"key": DEVICE, "operator": "Equal", "value": device,
                    "effect": "NoSchedule"}]
    if partition is not None:
        term.append(partition)
        if partition["operator"] == "In":
            tolerations.append({"key": PARTITION, "operator": "Equal",
                                "value": partition["values"][0], "effect": "NoSchedule"})
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": term}]}}}
    pod["spec"]["tolerations"] = tolerations
    return pod


def test_the_three_flyte_task_forms_land_where_they_should(
        controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        # Untainted on purpose (the pods still carry flytepropeller's tolerations): what keeps
        # each pod where it belongs is then the extender, not a taint.
        a100 = {DEVICE: "nvidia-tesla-a100"}
        for i in range(2):
            cluster.create_node(f"a100-{i}", {"nvidia.com/gpu": 8}, labels=a100)
        cluster.create_node("a100-mig", {"nvidia.com/gpu": 7},
                            labels={**a100, PARTITION: "1g.5gb"})
        for i in range(2):
            cluster.create_node(f"t4-{i}", {"nvidia.com/gpu": 4},
                                labels={DEVICE: "nvidia-tesla-t4"})

        create_pods(cluster, [
            flyte_task_pod("whole", "nvidia-tesla-a100"),
            flyte_task_pod("partition", "nvidia-tesla-a100",
                           {"key": PARTITION, "operator": "In", "values": ["1g.5gb"]}),
            *[flyte_task_pod(f"unpartitioned-{i}", "nvidia-tesla-a100",
                             {"key": PARTITION, "operator": "DoesNotExist"}) for i in range(3)],
            *[flyte_task_pod(f"untyped-{i}", None) for i in range(3)],
        ])
        # @task(accelerator=A100): a whole A100, never one 5 GB partition of one.
        assert wait_bound(cluster, "whole") in ("a100-0", "a100-1")
        whole = assignment(cluster.api(), "whole")
        assert whole.type_id == "a100-40gb" and whole.grants[0].whole
        # A100.partition_1g_5gb: one 1g.5gb instance on the partitioned node.
        assert wait_bound(cluster, "partition") == "a100-mig"
        part = assignment(cluster.api(), "partition")
        assert part.grants[0].mig_profile == "1g.5gb"
        # A100.unpartitioned(): never on a partition.
        for i in range(3):
            assert wait_bound(cluster, f"unpartitioned-{i}") in ("a100-0", "a100-1")
        # No accelerator: untyped, never on a (protected) A100.
        for i in range(3):
            assert wait_bound(cluster, f"untyped-{i}").startswith("t4-")
