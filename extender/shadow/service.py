"""The shadow's object graph: a read-only watch (``ClusterSync`` with a ``ShadowApplier``), the
extender's own verbs for the judgement, a ledger, and a small HTTP server for the report.

Nothing here can write to the API: the client is used only as a ``ResourceLister`` (list and
watch), and no binder or event recorder is built.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from extender.apiserver.client import ResourceLister
from extender.apiserver.errors import KubeError
from extender.core.workload import WorkloadMix
from extender.inventory.store import Inventory
from extender.model import PodKey
from extender.platform import Platform
from extender.scheduling.scheduler import Scheduler
from extender.server.metrics import ExtenderMetrics
from extender.shadow.applier import ShadowApplier
from extender.shadow.judge import ShadowJudge
from extender.shadow.ledger import ShadowLedger
from extender.sync.cluster import ClusterSync


class ShadowService:
    def __init__(self, platform: Platform, api: ResourceLister, *,
                 state_file: str | None = None, watch_timeout_seconds: int = 300) -> None:
        self.platform = platform
        self.inventory = Inventory(platform.catalog)
        self.ledger = ShadowLedger(state_file=state_file)
        self.applier = ShadowApplier(platform, self.inventory, self.ledger.add)
        metrics = ExtenderMetrics()
        scheduler = Scheduler(platform, self.inventory, WorkloadMix(), _NoWrites(), metrics,
                              reservation_ttl=platform.config.service.reservation_ttl_seconds,
                              check_cpu_memory=platform.config.service.check_cpu_memory)
        self.applier.on_placed = scheduler.observed_placed
        self.scheduler = scheduler
        self.applier.judge = ShadowJudge(platform, self.inventory, scheduler)
        self.sync = ClusterSync(
            api, self.applier, self.inventory,
            reconcile_interval_seconds=platform.config.service.reconcile_interval_seconds,
            watch_timeout_seconds=watch_timeout_seconds, on_synced=self._synced)

    def _synced(self) -> None:
        self.ledger.synced = True
        self.ledger.save()

    def start(self) -> None:
        self.sync.start()

    def stop(self) -> None:
        self.sync.stop()


class _NoWrites:
    """The shadow's ``PodWriter``: the judge only explains, so nothing may ever reach the API;
    a write attempt is a bug, refused as the shadow's RBAC would refuse it."""

    def _refuse(self, what: str) -> None:
        raise KubeError(f"the shadow never writes ({what})", status=403)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        self._refuse(f"get pod {namespace}/{name} for a bind")
        return {}

    def patch_pod_annotations(self, namespace: str, name: str, uid: str,
                              annotations: Mapping[str, str]) -> None:
        self._refuse(f"annotate pod {namespace}/{name}")

    def create_binding(self, namespace: str, name: str, uid: str, node: str,
                       annotations: Mapping[str, str] | None = None) -> None:
        self._refuse(f"bind pod {namespace}/{name}")

    def record_event(self, pod: PodKey, *, reason: str, message: str,
                     event_type: str = "Normal") -> None:
        self._refuse(f"event on pod {pod}")


class ReportServer:
    """``GET /report`` (JSON), ``/metrics`` (Prometheus), ``/healthz``, ``/readyz`` (200 once
    the first lists are applied). One thread, owned here; ``stop`` ends it."""

    def __init__(self, ledger: ShadowLedger, host: str, port: int) -> None:
        handler = _handler_for(ledger)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="shadow-report", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _handler_for(ledger: ShadowLedger) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            path = self.path.split("?", 1)[0]
            if path == "/report":
                self._send(200, orjson.dumps(ledger.to_json()), "application/json")
            elif path == "/metrics":
                self._send(200, ledger.exposition(), "text/plain; version=0.0.4")
            elif path == "/healthz":
                self._send(200, b"ok", "text/plain")
            elif path == "/readyz":
                ready = ledger.synced
                self._send(200 if ready else 503, b"ok" if ready else b"not synced",
                           "text/plain")
            else:
                self._send(404, orjson.dumps({"Error": f"no such path {path!r}; try /report, "
                                                       "/metrics, /healthz, /readyz"}),
                           "application/json")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # the report server is quiet; the shadow logs its own lines

    return Handler
