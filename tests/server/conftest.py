"""Services and Flask clients for the server tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from extender.apiserver.events import EventQueue
from extender.platform import Platform
from extender.server.app import create_app
from extender.server.service import ExtenderService
from extender.sync.offline import load_cluster_file
from extender.sync.score_facts import ScoreFacts
from tests.sync.fake_api import FakeApiServer

DATA = Path(__file__).resolve().parent.parent / "data"


def fixture_bytes(name: str) -> bytes:
    return (DATA / name).read_bytes()


def online_service(platform: Platform, api: FakeApiServer, *,
                   clock: Callable[[], float] | None = None, facts: ScoreFacts | None = None,
                   event_queue: EventQueue | None = None) -> ExtenderService:
    """A service over a fake API server, loaded from it as the first list would (no watch
    threads: tests feed events to ``service.applier`` themselves). ``facts``: the exact
    cut's, listed from the same objects (no services); ``event_queue``: where its events go
    (not started here: a test pumps it)."""
    service = ExtenderService(platform, api, clock=clock or time.monotonic, facts=facts,
                              event_queue=event_queue)
    nodes, pods = api.list_objects("nodes").items, api.list_objects("pods").items
    service.applier.replace_nodes(nodes)
    service.applier.replace_pods(pods)
    if facts is not None:
        facts.replace_nodes(nodes)
        facts.replace_pods(pods)
        facts.replace_services([])
    service.inventory.mark_synced()
    return service


@pytest.fixture
def offline_service(platform: Platform) -> Iterator[ExtenderService]:
    service = ExtenderService.from_cluster_objects(platform,
                                                   load_cluster_file(DATA / "cluster.json"))
    service.start()
    yield service
    service.stop()


@pytest.fixture
def client(offline_service: ExtenderService) -> FlaskClient:
    return create_app(offline_service).test_client()


def post(client: FlaskClient, path: str, body: bytes | dict[str, Any]) -> Any:
    import orjson

    data = body if isinstance(body, bytes) else orjson.dumps(body)
    response = client.post(path, data=data, content_type="application/json")
    assert response.status_code == 200, response.data
    return response.get_json()
