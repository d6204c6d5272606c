"""The Flask app on the wire: AdmissionReview v1 in, AdmissionReview v1 out (uid echoed,
patchType JSONPatch, base64 patch, warnings), 400 for what is not a review, metrics."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from extender.webhook.admit import PodAdmission
from extender.webhook.app import create_app
from extender.webhook.review import MAX_WARNING_CHARS, encode_response
from tests.builders import make_pod
from tests.webhook.helpers import platform_with


@pytest.fixture
def client() -> FlaskClient:
    platform = platform_with({"platformMapping": {"typeLabel": "gke"}})
    return create_app(platform).test_client()


def envelope(pod: dict[str, Any], uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002",
             kind: str = "Pod") -> dict[str, Any]:
    """A review as the API server sends it (admission.k8s.io/v1)."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": "", "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": kind},
        "namespace": "ml", "operation": "CREATE",
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": pod, "oldObject": None, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}


def test_mutate_answers_with_the_uid_and_a_base64_json_patch(client: FlaskClient) -> None:
    pod = make_pod("p").gpus(1).accelerator("t4").obj()
    reply = client.post("/mutate", json=envelope(pod))
    assert reply.status_code == 200 and reply.content_type == "application/json"
    body = reply.get_json()
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    response = body["response"]
    assert set(response) == {"uid", "allowed", "patchType", "patch"}
    assert response["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    assert ops[0] == {"op": "add", "path": "/spec/schedulerName", "value": "gpu-scheduler"}
    assert ops[1]["path"] == "/spec/affinity"


def test_validate_refuses_with_status_and_warns(client: FlaskClient) -> None:
    refused = client.post("/validate", json=envelope(
        make_pod("p").gpus(1).accelerator("a1000").obj(), uid="u-1")).get_json()["response"]
    assert refused["uid"] == "u-1" and refused["allowed"] is False
    assert refused["status"]["code"] == 403
    assert refused["status"]["message"].startswith(
        "gpu-extender: metadata.labels[gpu-extender.io/accelerator]=\"a1000\": unknown GPU type")
    warned = client.post("/validate", json=envelope(
        make_pod("p").gpus(1).accelerator("h100").obj(), uid="u-2")).get_json()["response"]
    assert warned["allowed"] is True and len(warned["warnings"]) == 1
    assert "patch" not in warned and "status" not in warned


def test_a_pod_without_gpus_gets_a_bare_allow(client: FlaskClient) -> None:
    for path in ("/validate", "/mutate"):
        pod = make_pod("p").container(limits={"cpu": "1"}).obj()
        assert client.post(path, json=envelope(pod, uid="x")).get_json()["response"] == \
            {"uid": "x", "allowed": True}


def test_other_kinds_are_allowed_untouched(client: FlaskClient) -> None:
    reply = client.post("/mutate", json=envelope({"metadata": {}}, kind="Deployment"))
    assert reply.get_json()["response"] == {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                                            "allowed": True}


@pytest.mark.parametrize(("body", "error"), [
    (b"not json", "body: not JSON"),
    (b"[]", "body: must be a JSON object, not a list"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}).encode(),
     "apiVersion/kind: must be admission.k8s.io/v1/AdmissionReview, got "
     "'admission.k8s.io/v1beta1'/'AdmissionReview'"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                 "request": {"uid": ""}}).encode(),
     "request.uid: must be a non-empty string, got ''"),
])
def test_what_is_not_a_review_gets_400_with_the_reason(client: FlaskClient, body: bytes,
                                                        error: str) -> None:
    reply = client.post("/validate", data=body, content_type="application/json")
    assert reply.status_code == 400
    assert reply.get_json()["error"].startswith(error)


def test_health_and_metrics(client: FlaskClient) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.get("/readyz").get_json() == {"status": "ready"}
    client.post("/mutate", json=envelope(make_pod("p").gpus(1).obj()))
    client.post("/validate", data=b"{}", content_type="application/json")
    text = client.get("/metrics").get_data(as_text=True)
    assert 'gpu_extender_webhook_reviews_total{endpoint="mutate",outcome="patched"} 1.0' in text
    assert 'gpu_extender_webhook_reviews_total{endpoint="validate",outcome="malformed"} 1.0' \
        in text
    assert 'gpu_extender_webhook_review_duration_seconds_count{endpoint="mutate"} 1.0' in text


def test_warnings_are_single_line_and_bounded() -> None:
    body = json.loads(encode_response("u", warnings=["a\nb", "x" * 1000]))
    warnings = body["response"]["warnings"]
    assert warnings[0] == "a b"
    assert len(warnings[1]) == MAX_WARNING_CHARS and warnings[1].endswith("...")


def test_an_unexpected_error_allows_the_pod_and_is_counted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug must not block pod creation: the extender still checks at filter time."""
    def bug(self: PodAdmission, request: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(PodAdmission, "mutate", bug)
    client = create_app(platform_with({"platformMapping": {"typeLabel": "gke"}})).test_client()
    pod = make_pod("p").gpus(1).obj()
    reply = client.post("/mutate", json=envelope(pod, uid="e"))
    assert reply.status_code == 200
    assert reply.get_json()["response"] == {"uid": "e", "allowed": True}
    text = client.get("/metrics").get_data(as_text=True)
    assert 'gpu_extender_webhook_reviews_total{endpoint="mutate",outcome="error"} 1.0' in text
