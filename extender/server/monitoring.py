"""The monitoring listener: /healthz, /readyz and /metrics over plain HTTP on a second address.

The verbs listen where kube-scheduler expects them (loopback for a sidecar, TLS for a Service);
kubelet probes and Prometheus need an address on the pod IP, and must not need the scheduler's
client certificate. This is the runtime's ``SideListener`` with the service's three read-only
routes, so exposing it on the pod network opens nothing that can schedule or bind. It runs in
the gunicorn worker (where the service lives), in threads owned by the listener and stopped
with it.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST

from extender.runtime.command import DEFAULT_HEAD_TIMEOUT_S
from extender.runtime.listener import (
    Route,
    SideListener,
    always_ok,
    check_bindable,
    health_route,
    parse_address,
)
from extender.server.service import ExtenderService

__all__ = ["MonitoringServer", "check_bindable", "monitoring_routes", "parse_address"]


def monitoring_routes(service: ExtenderService) -> dict[str, Route]:
    return {
        "/healthz": health_route(always_ok),
        "/readyz": health_route(
            lambda: None if service.ready() else "inventory not synced yet", ok="ready"),
        "/metrics": lambda: (200, service.metrics.exposition(), CONTENT_TYPE_LATEST),
    }


class MonitoringServer(SideListener):
    def __init__(self, service: ExtenderService, host: str, port: int, *,
                 head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S) -> None:
        super().__init__(monitoring_routes(service), host, port, name="monitoring-listener",
                         head_timeout_s=head_timeout_s)
