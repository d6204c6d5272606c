"""``POST /preempt`` end to end through the Flask app over a fake API server: the wire forms,
the shields read from pod JSON (priority, terminating, DaemonSet, a bind in flight), the metrics,
and the edge checks."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from extender.model import Assignment, GpuGrant, RequestKind
from extender.platform import Platform
from extender.server.app import create_app
from extender.server.service import ExtenderService
from tests.builders import JSON, make_node, make_pod
from tests.server.conftest import online_service, post
from tests.sync.fake_api import FakeApiServer

GIB = 1024


def share_on(name: str, index: int, gib: int, *, priority: int = 100, started: str = "",
             **extra: Any) -> JSON:
    """A bound 12 GiB-style share on GPU ``index`` of n1, with its assigned annotation."""
    pod = make_pod(name).gpu_memory(f"{gib}Gi").node_name("n1").phase("Running").assigned(
        Assignment("n1", RequestKind.VRAM, (GpuGrant(index, gib * GIB),))).obj()
    pod["spec"]["priority"] = priority
    pod["status"]["startTime"] = started or "2026-12-01T10:00:00Z"
    pod["metadata"].update(extra)
    return pod


def preemptor(gib: int = 14, priority: int = 1000) -> JSON:
    pod = make_pod("hi").gpu_memory(f"{gib}Gi").obj()
    pod["spec"]["priority"] = priority
    return pod


@pytest.fixture
def pods() -> list[JSON]:
    # GPU0: a + b (12 + 12 = 24 of 24 GiB); GPU1: c + d (the same)
    return [share_on("a", 0, 12, started="2026-12-01T10:00:00Z"),
            share_on("b", 0, 12, started="2026-12-01T11:00:00Z"),
            share_on("c", 1, 12, started="2026-12-01T12:00:00Z"),
            share_on("d", 1, 12, started="2026-12-01T13:00:00Z")]


def serve(platform: Platform, pods: list[JSON], *, others: int = 0
          ) -> tuple[ExtenderService, FlaskClient]:
    """n1 (2 x L4), after ``others`` nodes of 1 x T4 (the inventory's rows are per node)."""
    nodes = [make_node(f"n0-{i}").gfd("Tesla-T4", count=1, memory=15360).allocatable(gpu=1)
             .obj() for i in range(others)]
    nodes.append(make_node("n1").gfd("NVIDIA-L4", count=2, memory=24576).allocatable(gpu=2)
                 .obj())
    service = online_service(platform, FakeApiServer(nodes, pods))
    return service, create_app(service).test_client()


def meta_args(pod: JSON, victims: dict[str, list[str]]) -> JSON:
    return {"Pod": pod, "NodeNameToMetaVictims": {
        node: {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": 0}
        for node, uids in victims.items()}}


def victims_of(answer: JSON) -> dict[str, set[str]]:
    return {node: {p["UID"] for p in v["Pods"]}
            for node, v in answer["NodeNameToMetaVictims"].items()}


def test_kube_spread_replaced_by_one_gpu(platform: Platform, pods: list[JSON]) -> None:
    # kube's dry run picked one pod per GPU (a, c): 12 GiB free on each, 14 fits neither.
    # Two on one GPU: {a, b} or {c, d}; equal priorities, so the newer pair (c, d).
    service, client = serve(platform, pods)
    answer = post(client, "/preempt", meta_args(preemptor(), {"n1": ["uid-a", "uid-c"]}))
    assert victims_of(answer) == {"n1": {"uid-c", "uid-d"}}
    assert answer["NodeNameToMetaVictims"]["n1"]["NumPDBViolations"] == 0
    text = service.metrics.exposition().decode()
    assert 'gpu_extender_decisions_total{outcome="victims",verb="preempt"} 1.0' in text
    assert "gpu_extender_preemption_victims_total 2.0" in text


def test_a_share_preempts_on_a_cluster_of_many_nodes(platform: Platform,
                                                     pods: list[JSON]) -> None:
    """The same decision with n1 among other nodes (it was an internal error: the what-if
    rows kept the inventory's per-node DRA flags, one per node, not one per victim set)."""
    _, client = serve(platform, pods, others=3)
    answer = post(client, "/preempt", meta_args(preemptor(), {"n1": ["uid-a", "uid-c"]}))
    assert victims_of(answer) == {"n1": {"uid-c", "uid-d"}}


def test_full_pod_form(platform: Platform, pods: list[JSON]) -> None:
    _, client = serve(platform, pods)
    body = {"Pod": preemptor(), "NodeNameToVictims": {
        "n1": {"Pods": [pods[0], pods[2]], "NumPDBViolations": 1}}}
    assert victims_of(post(client, "/preempt", body)) == {"n1": {"uid-c", "uid-d"}}


def test_shields_from_pod_json(platform: Platform, pods: list[JSON]) -> None:
    # d terminates, c is a DaemonSet pod: GPU1 has nothing eligible, so GPU0's pair.
    pods[3]["metadata"]["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    pods[2]["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds",
                                               "apiVersion": "apps/v1", "uid": "x"}]
    _, client = serve(platform, pods)
    answer = post(client, "/preempt", meta_args(preemptor(), {"n1": ["uid-a", "uid-c"]}))
    assert victims_of(answer) == {"n1": {"uid-a", "uid-b"}}


def test_equal_priority_and_too_large_evict_nothing(platform: Platform,
                                                    pods: list[JSON]) -> None:
    service, client = serve(platform, pods)
    equal = post(client, "/preempt", meta_args(preemptor(priority=100), {"n1": ["uid-a"]}))
    too_large = post(client, "/preempt", meta_args(preemptor(gib=30), {"n1": ["uid-a"]}))
    assert equal == too_large == {"NodeNameToMetaVictims": {}}
    text = service.metrics.exposition().decode()
    assert 'gpu_extender_preemption_nodes_total{outcome="insufficient"} 1.0' in text
    assert 'gpu_extender_preemption_nodes_total{outcome="never"} 1.0' in text


def test_bind_in_flight_is_no_victim(platform: Platform, pods: list[JSON]) -> None:
    # b's holding is a fresh reservation of ours (ASSUMED), not what the API shows
    service, client = serve(platform, pods)
    b = service.inventory.holding("uid-b")
    assert b is not None and b.assignment is not None
    service.inventory.forget("uid-b")
    service.inventory.remove_pod("uid-b")
    service.inventory.assume(b.key, b.assignment)
    answer = post(client, "/preempt", meta_args(preemptor(), {"n1": ["uid-a"]}))
    assert victims_of(answer) == {"n1": {"uid-c", "uid-d"}}


@pytest.mark.parametrize(("body", "field"), [
    ({"NodeNameToMetaVictims": {}}, "Pod"),
    ({"Pod": {}}, "NodeNameToMetaVictims"),
    ({"Pod": {}, "NodeNameToMetaVictims": []}, "NodeNameToMetaVictims"),
    ({"Pod": {}, "NodeNameToMetaVictims": {"n1": {"Pods": {}}}}, "NodeNameToMetaVictims[n1].Pods"),
    ({"Pod": {}, "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": 7}]}}},
     "NodeNameToMetaVictims[n1].Pods[0].UID"),
    ({"Pod": {}, "NodeNameToMetaVictims": {"n1": {"Pods": [], "NumPDBViolations": "x"}}},
     "NodeNameToMetaVictims[n1].NumPDBViolations"),
    ({"Pod": {}, "NodeNameToVictims": {"n1": {"Pods": [{"metadata": {}}]}}},
     "NodeNameToVictims[n1].Pods[0].metadata.uid"),
])
def test_malformed_is_400_naming_the_field(platform: Platform, pods: list[JSON],
                                           body: JSON, field: str) -> None:
    _, client = serve(platform, pods)
    response = client.post("/preempt", json=body)
    assert response.status_code == 400
    assert response.get_json()["Error"].startswith(field + ":")


def test_cpu_pod_passes_through(platform: Platform, pods: list[JSON]) -> None:
    _, client = serve(platform, pods)
    pod = make_pod("cpu").obj()
    pod["spec"]["priority"] = 1000
    answer = post(client, "/preempt", meta_args(pod, {"n1": ["uid-a"], "n2": []}))
    assert victims_of(answer) == {"n1": {"uid-a"}}
