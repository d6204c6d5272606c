"""The monitoring listener's readiness follows the inventory: 503 until the first full list
of nodes and pods is applied, 200 after (the kubelet's readinessProbe asks this)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from extender.platform import Platform
from extender.server.monitoring import MonitoringServer
from extender.server.service import ExtenderService
from tests.sync.fake_api import FakeApiServer


def _status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_readiness_is_false_until_the_first_full_sync(platform: Platform) -> None:
    api = FakeApiServer()
    service = ExtenderService(platform, api)
    server = MonitoringServer(service, "127.0.0.1", 0)
    server.start()
    try:
        assert _status(server.port, "/healthz") == 200  # alive: no restart while syncing
        assert _status(server.port, "/readyz") == 503
        service.applier.replace_nodes(api.list_objects("nodes").items)
        assert _status(server.port, "/readyz") == 503  # nodes alone are not a full sync
        service.applier.replace_pods(api.list_objects("pods").items)
        service.inventory.mark_synced()
        assert _status(server.port, "/readyz") == 200
    finally:
        server.stop()


def test_a_taken_port_is_an_error_at_start(platform: Platform) -> None:
    service = ExtenderService(platform, FakeApiServer())
    first = MonitoringServer(service, "127.0.0.1", 0)
    try:
        with pytest.raises(OSError):
            MonitoringServer(service, "127.0.0.1", first.port)
    finally:
        first.stop()
