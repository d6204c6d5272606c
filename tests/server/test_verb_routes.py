"""The verbs answered in front of Flask (``verb_routes``) keep Flask's HTTP contract: another
method is a JSON 405 with ``Allow``, a chunked body over the limit a 413 naming the limit, a
bug in the route itself a JSON 500 without a traceback; other paths still reach Flask."""

from __future__ import annotations

import io

import orjson
import pytest

from extender.server import verb_routes
from extender.server.app import create_app
from extender.server.limits import RequestLimits
from extender.server.service import ExtenderService
from tests.server.conftest import fixture_bytes


def no_traceback(body: bytes) -> None:
    assert b"Traceback" not in body and b'File "' not in body


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_another_method_on_a_verb_is_a_json_405(offline_service: ExtenderService,
                                                method: str) -> None:
    client = create_app(offline_service).test_client()
    response = client.open("/bind", method=method)
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.get_json()["Error"].startswith("405 Method Not Allowed")


def test_a_chunked_body_over_the_limit_is_a_413(offline_service: ExtenderService) -> None:
    # no Content-Length (chunked under gunicorn): read up to the limit + 1 byte, then refused
    client = create_app(offline_service, limits=RequestLimits(max_body_bytes=100)).test_client()
    body = b"x" * 150
    response = client.post("/filter", environ_overrides={
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": "", "wsgi.input_terminated": True})
    assert response.status_code == 413
    assert "limit of 100 bytes (--max-body-bytes)" in response.get_json()["Error"]


def test_an_announced_length_over_the_limit_is_refused_unread(
        offline_service: ExtenderService) -> None:
    client = create_app(offline_service, limits=RequestLimits(max_body_bytes=100)).test_client()
    response = client.post("/bind", data=b"y" * 101)
    assert response.status_code == 413
    assert response.get_json()["Error"] == ("413 Request Entity Too Large: body: 101 bytes "
                                            "announced, the limit is 100 (--max-body-bytes)")


def test_a_body_shorter_than_announced_is_a_408(offline_service: ExtenderService) -> None:
    # gunicorn's reader returns a short read when the socket's deadline passes
    client = create_app(offline_service, limits=RequestLimits(body_read_timeout_s=2)).test_client()
    response = client.post("/filter", environ_overrides={
        "wsgi.input": io.BytesIO(b"{}"), "CONTENT_LENGTH": "50"})
    assert response.status_code == 408
    assert response.get_json() == {"Error": "body: not received within 2 s"}


def test_a_bug_in_the_route_is_a_json_500(offline_service: ExtenderService,
                                          monkeypatch: pytest.MonkeyPatch,
                                          caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_: object) -> bytes:
        raise KeyError("wsgi.input")

    monkeypatch.setattr(verb_routes, "read_body", broken)
    response = create_app(offline_service).test_client().post(
        "/filter", data=fixture_bytes("filter_typed_nodenames.json"))
    assert response.status_code == 500
    assert response.get_json() == {"Error": "internal error: KeyError"}
    no_traceback(response.data)
    assert any(r.exc_info for r in caplog.records)


def test_a_verb_answers_with_its_length_and_other_paths_reach_flask(
        offline_service: ExtenderService) -> None:
    client = create_app(offline_service).test_client()
    response = client.post("/filter", data=fixture_bytes("filter_typed_nodenames.json"))
    assert response.status_code == 200
    assert response.headers["Content-Length"] == str(len(response.data))
    assert orjson.loads(response.data)["NodeNames"] == ["gpu-l4-0"]
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.get("/nope").status_code == 404
