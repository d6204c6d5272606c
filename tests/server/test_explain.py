"""``/debug/explain`` of a bound pod (its placement, the chosen node against the runner-up,
term by term) and of a pending one (reasons grouped by node class), and the Normal event and
log line of every bind."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.apiserver.errors import KubeError
from extender.server.service import ExtenderService
from tests.server.conftest import post

UID = "5d1c9a7e-0000-4000-8000-00000000e1a1"


def untyped_pod(name: str, uid: str, gpus: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": uid,
                         "resourceVersion": "1"},
            "spec": {"containers": [{"name": "main", "resources": {
                "limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def schedule(client: FlaskClient, offline_service: ExtenderService, pod: dict[str, Any]
             ) -> str:
    """filter -> prioritize -> bind the top node, as kube-scheduler would."""
    names = offline_service.inventory.node_names()
    args = {"Pod": pod, "Nodes": None, "NodeNames": names}
    feasible = post(client, "/filter", args)["NodeNames"]
    scores = post(client, "/prioritize", {**args, "NodeNames": feasible})
    node = max(scores, key=lambda s: s["Score"])["Host"] if scores else feasible[0]
    meta = pod["metadata"]
    assert post(client, "/bind", {"PodName": meta["name"], "PodNamespace": meta["namespace"],
                                  "PodUID": meta["uid"], "Node": node}) == {"Error": ""}
    return str(node)


def test_a_bound_pod_shows_its_assignment_and_the_runner_up(
        client: FlaskClient, offline_service: ExtenderService,
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="extender.scheduling.explain"):
        node = schedule(client, offline_service, untyped_pod("train-1", UID, 1))
    report = client.get("/debug/explain/ml/train-1").get_json()
    assert report["status"] == "bound"
    placement = report["placement"]
    assert placement["node"] == node and placement["source"] == "inventory"
    assignment = placement["assignment"]
    assert assignment["node"] == node and len(assignment["gpus"]) == 1
    assert assignment["type"] in {"t4", "l4"}  # untyped: never the protected A100
    breakdown = placement["breakdown"]
    assert breakdown["strategy"] == "cost-fragmentation"
    assert breakdown["chosen"]["node"] == node and breakdown["runnerUp"] is not None
    assert breakdown["runnerUp"]["node"] != node
    assert breakdown["chosen"]["score"] > breakdown["runnerUp"]["score"]
    chosen = {t["name"]: t for t in breakdown["chosen"]["terms"]}
    frag = chosen["fragmentation"]
    assert frag["after"] == pytest.approx(frag["before"] + frag["value"])
    assert chosen["price"]["unit"] == "$/h" and chosen["price"]["value"] > 0
    # the key terms are ranked in order, and the reason names the first one that differs
    assert next(t["name"] for t in breakdown["chosen"]["terms"] if "key" in t) == "loss"
    assert breakdown["decidedBy"] in chosen and breakdown["reason"]
    # bound: not judged again as if it were new
    assert report["nodes"] == [] and report["reasons"] == []
    # ... unless posted without spec.nodeName (what the shadow asks: "where would it go?")
    posted = client.post("/debug/explain", data=orjson.dumps(
        untyped_pod("train-1", UID, 1))).get_json()
    assert posted["status"] == "pending" and posted["summary"]["fits"] >= 1
    # the Normal event, from the same terms
    assert offline_service.offline is not None
    events = [e for e in offline_service.offline.events if e["pod"] == "ml/train-1"]
    assert [e["type"] for e in events] == ["Normal"]
    gpu = assignment["gpus"][0]
    assert events[0]["reason"] == "GpuAssigned"
    assert events[0]["message"].startswith(
        f"assigned GPU {gpu} ({assignment['type']}) on node {node}: {breakdown['reason']}, "
        f"fragmentation {frag['value']:+.2f} GPU, $")
    # one structured log line for the placement
    placed = [r for r in caplog.records if r.getMessage() == "pod placed"]
    assert len(placed) == 1
    fields = placed[0].fields  # type: ignore[attr-defined]
    assert fields["node"] == node and fields["gpus"] == [gpu]
    assert fields["runner_up"] == breakdown["runnerUp"]["node"]


def test_a_pod_bound_before_this_process_shows_its_annotation(client: FlaskClient) -> None:
    report = client.get("/debug/explain/ml/trainer-0").get_json()
    assert report["status"] == "bound"
    placement = report["placement"]
    assert placement["assignment"]["node"] == placement["node"]
    assert placement["breakdown"] is None and "recorded" in placement["breakdownMissing"]


def test_a_pending_pod_groups_its_reasons_by_node_class(client: FlaskClient,
                                                        offline_service: ExtenderService
                                                        ) -> None:
    pod = untyped_pod("wide", "5d1c9a7e-0000-4000-8000-00000000e1a2", 8)
    report = client.post("/debug/explain", data=orjson.dumps(pod)).get_json()
    assert report["status"] == "pending" and report["placement"] is None
    groups = report["reasons"]
    assert sum(g["count"] for g in groups) == len(report["nodes"])
    assert sum(g["count"] for g in groups if g["verdict"] == "fits") == \
        report["summary"]["fits"]
    for group in groups:
        members = [n for n in report["nodes"] if n["node"] in group["examples"]]
        assert {n["verdict"] for n in members} == {group["verdict"]}
    print(orjson.dumps(groups, option=orjson.OPT_INDENT_2).decode())


def test_a_failed_event_write_is_logged_and_never_fails_the_bind(
        client: FlaskClient, offline_service: ExtenderService,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    assert offline_service.offline is not None

    def refuse(*args: object, **kwargs: object) -> None:
        raise KubeError("events is forbidden", status=403)

    monkeypatch.setattr(offline_service.offline, "record_event", refuse)
    with caplog.at_level(logging.INFO):
        node = schedule(client, offline_service, untyped_pod("train-2", UID, 1))  # bound
    assert offline_service.offline.get_pod("ml", "train-2")["spec"]["nodeName"] == node
    failed = [r for r in caplog.records if r.getMessage() == "could not record event"]
    assert len(failed) == 1 and failed[0].levelno == logging.WARNING
    assert "forbidden" in failed[0].fields["error"]  # type: ignore[attr-defined]
    assert any(r.getMessage() == "pod placed" for r in caplog.records)
