"""Self-tests of the localcluster harness: the real kube-scheduler places pods on fake nodes,
the shipped scheduler configs and RBAC are accepted, and failed starts leave nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import CoreV1Event
from kubernetes.client.exceptions import ApiException

from localcluster import ClusterStartupError, ControlPlaneBinaries, ExtenderSpec, LocalCluster
from localcluster.binaries import REPO_ROOT

pytestmark = pytest.mark.e2e

E2E_DATA = Path(__file__).parent / "data"
SHIPPED_SCHEDULER_CONFIGS = sorted((REPO_ROOT / "scheduler-config").glob("*.yaml"))


def pod_manifest(
    name: str, gpus: int = 0, scheduler_name: str = "default-scheduler"
) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "resources": {"limits": limits},
                }
            ],
        },
    }


def bound_node(cluster: LocalCluster, name: str, timeout_s: float = 30.0) -> str:
    """Wait until pod default/<name> has been bound and return the node name."""
    core = cluster.api()
    node: str = cluster.wait_for(
        lambda: core.read_namespaced_pod(name, "default").spec.node_name,
        timeout_s=timeout_s,
        description=f"pod {name} to be bound",
    )
    return node


def events_with_reason(cluster: LocalCluster, pod: str, reason: str) -> list[CoreV1Event]:
    return cluster.wait_for(
        lambda: [e for e in cluster.events_for_pod("default", pod) if e.reason == reason],
        description=f"a {reason} event for {pod}",
    )


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_forbidden(call: Callable[[], object]) -> None:
    with pytest.raises(ApiException) as error:
        call()
    assert error.value.status == 403


@pytest.fixture(scope="module")
def plain_cluster(controlplane_binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    with LocalCluster(
        scheduler_config=E2E_DATA / "plain-scheduler.yaml", binaries=controlplane_binaries
    ) as cluster:
        yield cluster
    assert not any(process_exists(pid) for pid in cluster.started_pids), "orphaned processes"


def test_real_scheduler_binds_gpu_pod_to_the_node_with_gpus(plain_cluster: LocalCluster) -> None:
    plain_cluster.create_node(
        "gpu-node-0", {"nvidia.com/gpu": 8}, labels={"nvidia.com/gpu.product": "H100"}
    )
    plain_cluster.create_node("cpu-node-0")  # fits on cpu/memory, but has no GPUs
    plain_cluster.api().create_namespaced_pod("default", pod_manifest("one-gpu", gpus=1))

    assert bound_node(plain_cluster, "one-gpu") == "gpu-node-0"
    scheduled = events_with_reason(plain_cluster, "one-gpu", "Scheduled")
    assert "gpu-node-0" in scheduled[0].message


def test_pod_asking_for_more_gpus_than_any_node_has_is_unschedulable(
    plain_cluster: LocalCluster,
) -> None:
    plain_cluster.create_node("gpu-node-small", {"nvidia.com/gpu": 2})
    plain_cluster.api().create_namespaced_pod("default", pod_manifest("sixteen-gpus", gpus=16))

    failed = events_with_reason(plain_cluster, "sixteen-gpus", "FailedScheduling")
    assert "Insufficient nvidia.com/gpu" in failed[0].message
    pod = plain_cluster.api().read_namespaced_pod("sixteen-gpus", "default")
    assert pod.spec.node_name is None


def test_extender_identity_has_exactly_the_shipped_rbac(plain_cluster: LocalCluster) -> None:
    extender_api = plain_cluster.api("gpu-extender")
    assert extender_api.list_node().items is not None
    extender_api.list_pod_for_all_namespaces(limit=1)
    # Anything not in manifests/rbac.yaml is forbidden.
    assert_forbidden(lambda: extender_api.list_namespaced_secret("kube-system"))
    assert_forbidden(lambda: extender_api.create_node({"metadata": {"name": "not-allowed"}}))
    assert_forbidden(lambda: extender_api.delete_collection_namespaced_pod("default"))


@pytest.mark.parametrize(
    "config_file", SHIPPED_SCHEDULER_CONFIGS, ids=[path.name for path in SHIPPED_SCHEDULER_CONFIGS]
)
def test_shipped_scheduler_configs_are_accepted_by_kube_scheduler(
    controlplane_binaries: ControlPlaneBinaries, config_file: Path
) -> None:
    # No extender is started: kube-scheduler validates the extender settings at startup but
    # only calls the extender for pods that request a managed resource.
    with LocalCluster(scheduler_config=config_file, binaries=controlplane_binaries) as cluster:
        cluster.create_node("cpu-node-0")
        profile = "gpu-scheduler" if "gpu-scheduler" in config_file.name else "default-scheduler"
        cluster.api().create_namespaced_pod(
            "default", pod_manifest("no-gpu", scheduler_name=profile)
        )
        assert bound_node(cluster, "no-gpu") == "cpu-node-0"


def test_failed_startup_stops_every_process_and_explains_why(
    controlplane_binaries: ControlPlaneBinaries, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = LocalCluster(
        scheduler_config=E2E_DATA / "invalid-weight-scheduler.yaml",
        binaries=controlplane_binaries,
    )
    with pytest.raises(ClusterStartupError) as raised:
        cluster.start()
    try:
        message = str(raised.value)
        assert "kube-scheduler exited" in message
        assert "positive weight" in message  # kube-scheduler's own validation error
        assert raised.value.workdir is not None
        assert str(raised.value.workdir) in message
        assert (raised.value.workdir / "kube-scheduler.log").exists()
        # etcd and kube-apiserver had started and must be gone too.
        assert len(cluster.started_pids) == 3
        assert not any(process_exists(pid) for pid in cluster.started_pids)
        assert "last lines of" in capsys.readouterr().err
    finally:
        if raised.value.workdir is not None:
            shutil.rmtree(raised.value.workdir, ignore_errors=True)


# ------------------------------------------------------------------ with an extender (the stub)


@pytest.fixture(scope="module")
def stub_extender_cluster(controlplane_binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    """The shipped gpu-scheduler config with tests/e2e/data/stub_extender.py as the extender."""
    stub = ExtenderSpec(
        lambda port: [sys.executable, str(E2E_DATA / "stub_extender.py"), str(port)]
    )
    with LocalCluster(
        scheduler_config=REPO_ROOT / "scheduler-config" / "gpu-scheduler-profile.yaml",
        extender=stub,
        binaries=controlplane_binaries,
    ) as cluster:
        cluster.create_node("gpu-a", {"nvidia.com/gpu": 4})
        cluster.create_node("gpu-b", {"nvidia.com/gpu": 4})
        cluster.create_node("cpu-0")
        yield cluster
    assert not any(process_exists(pid) for pid in cluster.started_pids), "orphaned processes"


def stub_calls(cluster: LocalCluster) -> dict[str, int]:
    with urllib.request.urlopen(f"{cluster.extender_url}/calls", timeout=5) as response:
        calls: dict[str, int] = json.load(response)
        return calls


def test_gpu_pod_is_filtered_scored_and_bound_by_the_extender(
    stub_extender_cluster: LocalCluster,
) -> None:
    cluster = stub_extender_cluster
    cluster.api().create_namespaced_pod(
        "default", pod_manifest("via-extender", gpus=1, scheduler_name="gpu-scheduler")
    )
    # Both GPU nodes fit; the stub scores gpu-b 10 and gpu-a 0, and weight 100 must win.
    assert bound_node(cluster, "via-extender") == "gpu-b"
    calls = stub_calls(cluster)
    assert calls.get("filter", 0) >= 1
    assert calls.get("prioritize", 0) >= 1
    assert calls.get("bind", 0) >= 1  # bound with the extender's RBAC, not by the scheduler


def test_gpu_pods_wait_while_the_extender_is_down_and_schedule_after_restart(
    stub_extender_cluster: LocalCluster,
) -> None:
    cluster = stub_extender_cluster
    cluster.stop_extender()
    cluster.api().create_namespaced_pod(
        "default", pod_manifest("while-down", gpus=1, scheduler_name="gpu-scheduler")
    )
    # ignorable: false => the scheduling attempt errors instead of bypassing the extender.
    failed = events_with_reason(cluster, "while-down", "FailedScheduling")
    assert "connection refused" in failed[0].message
    assert cluster.api().read_namespaced_pod("while-down", "default").spec.node_name is None

    cluster.start_extender()
    # Retried after the scheduler's backoff (at most podMaxBackoffSeconds, 10 s by default).
    assert bound_node(cluster, "while-down", timeout_s=40) in {"gpu-a", "gpu-b"}

    cluster.restart_extender()
    assert stub_calls(cluster) == {}  # a fresh process
