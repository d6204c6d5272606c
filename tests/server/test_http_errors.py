"""Malformed bodies get a 4xx naming the field; nothing ever answers with a traceback."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.server.service import ExtenderService
from tests.server.conftest import fixture_bytes

POD = {"metadata": {"name": "p", "namespace": "ml", "uid": "u"},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def no_traceback(body: bytes) -> None:
    assert b"Traceback" not in body and b'File "' not in body


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/filter", b"", "body"),
    ("/filter", b"{not json", "body"),
    ("/filter", b"[1, 2]", "body"),
    ("/filter", orjson.dumps({"NodeNames": ["a"]}), "Pod"),
    ("/filter", orjson.dumps({"Pod": "p", "NodeNames": ["a"]}), "Pod"),
    ("/filter", orjson.dumps({"Pod": POD, "NodeNames": "a,b"}), "NodeNames"),
    ("/filter", orjson.dumps({"Pod": POD, "NodeNames": [1, 2]}), "NodeNames"),
    ("/filter", orjson.dumps({"Pod": POD, "NodeNames": None, "Nodes": None}), "NodeNames"),
    ("/filter", orjson.dumps({"Pod": POD, "Nodes": {"items": [{"metadata": {}}]}}),
     "Nodes.items[0].metadata.name"),
    ("/filter", orjson.dumps({"Pod": POD, "Nodes": {"items": "x"}}), "Nodes.items"),
    ("/prioritize", orjson.dumps({"Pod": POD}), "NodeNames"),
    ("/prioritize", b"null", "body"),
    ("/bind", b"", "body"),
    ("/bind", orjson.dumps({"PodName": "p", "PodNamespace": "ml", "Node": "n"}), "PodUID"),
    ("/bind", orjson.dumps({"PodName": "p", "PodNamespace": "ml", "PodUID": "u",
                            "Node": ""}), "Node"),
    ("/bind", orjson.dumps({"PodName": 3, "PodNamespace": "ml", "PodUID": "u",
                            "Node": "n"}), "PodName"),
])
def test_malformed_bodies_get_400_naming_the_field(client: FlaskClient, path: str, body: bytes,
                                                   field: str) -> None:
    response = client.post(path, data=body, content_type="application/json")
    assert response.status_code == 400
    message = response.get_json()["Error"]
    assert message.startswith(f"{field}:"), message
    no_traceback(response.data)


def test_keys_match_case_insensitively_like_go(client: FlaskClient) -> None:
    args = orjson.loads(fixture_bytes("filter_typed_nodenames.json"))
    lowered = {"pod": args["Pod"], "nodenames": args["NodeNames"]}
    response = client.post("/filter", data=orjson.dumps(lowered))
    assert response.status_code == 200
    assert response.get_json()["NodeNames"] == ["gpu-l4-0"]


def test_wrong_method_and_unknown_paths_answer_json(client: FlaskClient) -> None:
    for response in (client.get("/filter"), client.post("/nope", data=b"{}")):
        assert response.status_code in (404, 405)
        assert "Error" in response.get_json()
        no_traceback(response.data)


def explode(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("kernel exploded")


def test_an_exception_in_filter_becomes_the_error_field(
        client: FlaskClient, offline_service: ExtenderService,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(offline_service.scheduler.evaluator, "evaluate", explode)
    response = client.post("/filter", data=fixture_bytes("filter_typed_nodenames.json"))
    assert response.status_code == 200
    result = response.get_json()
    assert result["Error"] == "internal error in filter: RuntimeError: kernel exploded"
    assert result["NodeNames"] == []
    no_traceback(response.data)
    assert any(r.exc_info for r in caplog.records)  # the traceback is logged server-side


def test_an_exception_in_the_strategy_falls_back_to_the_default_order_for_that_call(
        client: FlaskClient, offline_service: ExtenderService,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(offline_service.scheduler.scorer.strategy, "score", explode)
    response = client.post("/prioritize", data=fixture_bytes("filter_typed_nodenames.json"))
    # the one fitting node scores FALLBACK_SCORE 50 -> 5 on the wire; the pod is named
    assert response.status_code == 200 and response.get_json() == [
        {"Host": "gpu-l4-0", "Score": 5}]
    assert any("strategy failed" in r.getMessage() and r.exc_info for r in caplog.records)
    assert b"gpu_extender_strategy_failures_total 1.0" in offline_service.metrics.exposition()
    monkeypatch.undo()  # the next call is scored by the strategy again
    again = client.post("/prioritize", data=fixture_bytes("filter_typed_nodenames.json"))
    assert again.status_code == 200 and again.get_json() != []


def test_an_exception_in_prioritize_gives_no_scores(
        client: FlaskClient, offline_service: ExtenderService,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offline_service.scheduler.evaluator, "evaluate", explode)
    response = client.post("/prioritize", data=fixture_bytes("filter_typed_nodenames.json"))
    assert response.status_code == 200 and response.get_json() == []


def test_an_exception_in_bind_becomes_the_error_field(
        client: FlaskClient, offline_service: ExtenderService,
        monkeypatch: pytest.MonkeyPatch) -> None:
    client.post("/filter", data=fixture_bytes("filter_typed_nodenames.json"))
    monkeypatch.setattr(offline_service.scheduler.bind._binder, "bind", explode)
    response = client.post("/bind", data=fixture_bytes("bind_typed.json"))
    assert response.status_code == 200
    assert "RuntimeError" in response.get_json()["Error"]
    no_traceback(response.data)
    # the reservation taken for the failed bind was released
    assert offline_service.inventory.holding("0b8e1f7a-5c1d-4a8e-9b1e-3f2a7c9d0e11") is None


def test_an_exception_in_a_debug_endpoint_is_a_json_500(
        client: FlaskClient, offline_service: ExtenderService,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offline_service.verbs, "explain", explode)
    response = client.get("/debug/explain/ml/waiting-0")
    assert response.status_code == 500
    assert response.get_json() == {"Error": "internal error: RuntimeError"}


def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read(
        offline_service: ExtenderService) -> None:
    from extender.server.app import create_app
    from extender.server.limits import RequestLimits

    client = create_app(offline_service, limits=RequestLimits(max_body_bytes=1024)).test_client()
    body = orjson.dumps({"Pod": POD, "NodeNames": ["n"] * 400})  # ~2 KB
    response = client.post("/filter", data=body, content_type="application/json")
    assert response.status_code == 413
    assert "Error" in response.get_json()
    no_traceback(response.data)
    small = client.post("/filter", data=orjson.dumps({"Pod": POD, "NodeNames": ["n"]}),
                        content_type="application/json")
    assert small.status_code == 200


def test_pod_metadata_that_is_not_an_object_is_never_a_500(client: FlaskClient) -> None:
    # the verb's own error handler used to raise again while logging the pod key
    for metadata in (7, "x", [1], True):
        response = client.post("/filter", data=orjson.dumps(
            {"Pod": {"metadata": metadata, "spec": POD["spec"]}, "NodeNames": ["gpu-t4-0"]}),
            content_type="application/json")
        assert response.status_code == 200, response.data
        no_traceback(response.data)


@pytest.mark.parametrize(("value", "message"), [
    (3, "PodName: must be a string, got 3"),
    (None, "PodName: required; must be a non-empty string"),
    ("", "PodName: must not be empty"),
    ("x" * 300, "PodName: a 300-character name is longer than any Kubernetes name"),
], ids=["a number is a wrong type, not missing", "null is missing", "empty",
        "longer than a DNS subdomain"])
def test_bind_says_what_is_wrong_with_a_field(client: FlaskClient, value: object,
                                              message: str) -> None:
    body = {"PodName": value, "PodNamespace": "ml", "PodUID": "u", "Node": "n"}
    response = client.post("/bind", data=orjson.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert response.get_json()["Error"].startswith(message)


@pytest.mark.parametrize("count", ["1e20", 2**62, "65"])
def test_a_gpu_count_beyond_any_node_is_an_invalid_request_not_an_overflow(
        client: FlaskClient, count: object) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ml", "uid": f"u-{count}"},
           "spec": {"containers": [{"name": "c", "resources": {"limits": {
               "nvidia.com/gpu": count}}}]}}
    response = client.post("/filter", data=orjson.dumps({"Pod": pod, "NodeNames": ["gpu-t4-0"]}),
                           content_type="application/json")
    assert response.status_code == 200
    answer = response.get_json()
    assert "internal error" not in answer.get("Error", "")
    assert "more than any node may have" in answer["FailedAndUnresolvableNodes"]["gpu-t4-0"]
