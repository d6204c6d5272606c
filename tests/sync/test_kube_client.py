"""The thin API client over the real ``kubernetes`` package, against a fake HTTP API server;
the error translation; the binder's order and idempotence."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
from kubernetes import client as k8s

from extender.apiserver.binder import Binder
from extender.apiserver.client import ApiServerClient
from extender.apiserver.errors import Conflict, Gone, KubeError, NotFound, Unavailable, translate
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from tests.sync.http_apiserver import FakeApiState, fake_apiserver


@pytest.fixture
def api() -> Iterator[tuple[ApiServerClient, FakeApiState]]:
    with fake_apiserver() as (url, state):
        configuration = k8s.Configuration(host=url)
        yield ApiServerClient.from_configuration(configuration, request_timeout=5), state


def test_lists_are_raw_paginated_and_keep_the_first_pages_version(
        api: tuple[ApiServerClient, FakeApiState]) -> None:
    client, state = api
    listing = client.list_objects("nodes")
    assert [n["metadata"]["name"] for n in listing.items] == ["n0", "n1", "n2"]
    assert listing.resource_version == "100"
    assert state.requests[0][2]["limit"] == ["500"]
    pods = client.list_objects("pods")
    assert pods.items[0]["metadata"]["uid"] == "u1"
    assert state.requests[-1][2]["fieldSelector"] == \
        ["status.phase!=Succeeded,status.phase!=Failed"]


def test_watch_streams_raw_lines_with_bookmarks_requested(
        api: tuple[ApiServerClient, FakeApiState]) -> None:
    client, state = api
    state.watch_lines = [orjson.dumps({"type": "ADDED", "object": {
        "metadata": {"name": "n9", "resourceVersion": "101"}}}) + b"\n",
        b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"150"}}}\n']
    stream = client.watch_objects("nodes", "100", timeout_seconds=5)
    data = b"".join(stream.chunks())
    assert data.count(b"\n") == 2 and b"n9" in data
    query = state.requests[-1][2]
    assert query["watch"][0].lower() == "true" and query["resourceVersion"] == ["100"]
    assert query["allowWatchBookmarks"][0].lower() == "true"
    assert query["timeoutSeconds"] == ["5"]


def test_a_watch_refused_with_410_is_gone(api: tuple[ApiServerClient, FakeApiState]) -> None:
    client, state = api
    state.watch_status = 410
    with pytest.raises(Gone) as raised:
        client.watch_objects("nodes", "1", timeout_seconds=5)
    assert "too old resource version" in str(raised.value)
    assert raised.value.__cause__ is not None  # the client's ApiException, kept


def test_a_bind_is_one_binding_that_carries_the_annotations(
        api: tuple[ApiServerClient, FakeApiState]) -> None:
    client, state = api
    assignment = Assignment("n1", RequestKind.WHOLE, (GpuGrant(3, 23034, whole=True),), "l4")
    Binder(client).bind(PodKey("ml", "p", "u1"), "n1", assignment)
    assert [r[0] for r in state.requests] == ["POST"], "one write, no annotation patch"
    binding = orjson.loads(state.requests[0][4])
    annotations = binding["metadata"].pop("annotations")
    assert annotations["gpu-extender.io/visible-devices"] == "3"
    assert orjson.loads(annotations["gpu-extender.io/assigned"])["node"] == "n1"
    assert binding == {"apiVersion": "v1", "kind": "Binding",
                       "metadata": {"name": "p", "namespace": "ml", "uid": "u1"},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    assert state.pod["spec"]["nodeName"] == "n1"
    # retried: 409 for the same node is a success, for another node a Conflict
    binder = Binder(client)
    binder.bind(PodKey("ml", "p", "u1"), "n1", assignment)
    with pytest.raises(Conflict, match="already bound to node 'n1'"):
        binder.bind(PodKey("ml", "p", "u1"), "n2", None)
    # each Binding request is counted and timed, refused ones too (the pod read is not)
    assert binder.requests == 2 and binder.request_seconds > 0


def test_binds_reuse_one_kept_alive_connection(
        api: tuple[ApiServerClient, FakeApiState]) -> None:
    """The generated client never returned a ``_preload_content=False`` connection to its
    pool: every Binding paid a new connection (a TLS handshake against a real API server)."""
    client, state = api
    for _ in range(3):
        state.pod["spec"].pop("nodeName", None)
        client.create_binding("ml", "p", "u1", "n1", {"gpu-extender.io/visible-devices": "0"})
    client.record_event(PodKey("ml", "p", "u1"), reason="GpuAssigned", message="x")
    assert [r[1] for r in state.requests] == ["/api/v1/namespaces/ml/pods/p/binding"] * 3 + [
        "/api/v1/namespaces/ml/events"]
    assert len(set(state.peers)) == 1, f"one connection, not {len(set(state.peers))}"
    assert {r[3]["Content-Type"] for r in state.requests} == {"application/json"}


def test_errors_are_ours_with_the_clients_exception_as_cause(
        api: tuple[ApiServerClient, FakeApiState]) -> None:
    client, _ = api
    with pytest.raises(NotFound) as raised:
        client.get_pod("other", "nope")
    assert raised.value.status == 404
    assert isinstance(raised.value.__cause__, k8s.exceptions.ApiException)
    with pytest.raises(Conflict):
        client.patch_pod_annotations("ml", "p", "wrong-uid", {"a": "b"})


def test_an_event_is_posted_about_the_pod(api: tuple[ApiServerClient, FakeApiState]) -> None:
    client, state = api
    client.record_event(PodKey("ml", "p", "u1"), reason="GpuBindFailed", message="x",
                        event_type="Warning")
    method, path, _, _, body = state.requests[-1]
    assert (method, path) == ("POST", "/api/v1/namespaces/ml/events")
    event = orjson.loads(body)
    assert (event["reason"], event["message"], event["type"]) == ("GpuBindFailed", "x", "Warning")
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "ml",
                                       "name": "p", "uid": "u1"}


def test_an_unreachable_server_is_unavailable() -> None:
    client = ApiServerClient.from_configuration(k8s.Configuration(host="http://127.0.0.1:9"),
                                                request_timeout=2)
    client._core.api_client.rest_client.pool_manager.connection_pool_kw["retries"] = False
    with pytest.raises(Unavailable):
        client.get_pod("ml", "p")


def test_translate_maps_statuses() -> None:
    class FakeApiError(Exception):
        def __init__(self, status: int) -> None:
            self.status = status
            self.body = orjson.dumps({"message": "m", "reason": "R"})

    assert isinstance(translate(FakeApiError(410), "watch"), Gone)
    error = translate(FakeApiError(503), "list")
    assert isinstance(error, Unavailable) and str(error) == "list: HTTP 503 R: m"
    assert type(translate(FakeApiError(403), "x")) is KubeError
    already = NotFound("x")
    assert translate(already, "y") is already


def test_annotations_are_a_merge_patch_guarded_by_the_uid(
        api: tuple[ApiServerClient, FakeApiState]) -> None:
    client, state = api
    client.patch_pod_annotations("ml", "p", "u1", {"a": "b"})
    method, _, _, headers, body = state.requests[-1]
    assert method == "PATCH"
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert orjson.loads(body) == {"metadata": {"uid": "u1", "annotations": {"a": "b"}}}
