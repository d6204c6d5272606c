"""Run the service under gunicorn, building it in the worker (after the fork).

Threads (watches, reconciler) and API connections must not cross a fork: they would not exist
in the child, or share sockets with the parent. ``load`` runs in the worker, so everything is
created there; the master only validated the configuration.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from extender.runtime.background import background_threads_yield
from extender.runtime.certificates import CertificateExpiry
from extender.runtime.command import DEFAULT_HEAD_TIMEOUT_S
from extender.runtime.gunicorn import GunicornApp
from extender.server.app import create_app
from extender.server.limits import DEFAULT_LIMITS, RequestLimits
from extender.server.monitoring import MonitoringServer
from extender.server.service import ExtenderService


class ExtenderWorker:
    """What lives in the gunicorn worker: the service, the monitoring listener, the app."""

    def __init__(self, build: Callable[[], ExtenderService], *, debug_endpoints: bool,
                 monitoring: tuple[str, int] | None, limits: RequestLimits,
                 head_timeout_s: float, certificates: Sequence[Path] = ()) -> None:
        """``certificates``: the serving certificates whose expiry the metrics export."""
        self._build = build
        self._certificates = tuple(certificates)
        self._debug_endpoints = debug_endpoints
        self._monitoring_address = monitoring
        self._limits = limits
        self._head_timeout_s = head_timeout_s
        self._service: ExtenderService | None = None
        self._monitoring: MonitoringServer | None = None

    def load(self) -> Any:
        service = self._build()
        if self._certificates:
            service.metrics.registry.register(CertificateExpiry(self._certificates))
        service.when_synced(freeze_heap)  # this process is the service's alone
        if self._monitoring_address is not None:
            # bound before any watch starts: a taken port fails the worker's boot cleanly
            self._monitoring = MonitoringServer(service, *self._monitoring_address,
                                                head_timeout_s=self._head_timeout_s)
        service.start()
        self._service = service
        if self._monitoring is not None:
            # serving from the start, so probes see readiness flip when the first sync lands
            self._monitoring.start()
        # this thread answers filter and prioritize: the service's own threads (watches,
        # event writer, publishers, listener) never preempt it on waking
        background_threads_yield()
        return create_app(service, debug_endpoints=self._debug_endpoints, limits=self._limits)

    def stop(self) -> None:
        if self._monitoring is not None:
            self._monitoring.stop()
            self._monitoring = None
        if self._service is not None:
            self._service.stop()
            self._service = None


def freeze_heap() -> None:
    """After the first full sync, move everything alive into the GC's permanent generation:
    the inventory, decoded nodes and pods are long-lived, and a full collection walking them
    would stall a verb for milliseconds. Process-wide, so the process owner does it."""
    gc.collect()
    gc.freeze()


def run(settings: dict[str, Any], build: Callable[[], ExtenderService], *,
        debug_endpoints: bool = True, monitoring: tuple[str, int] | None = None,
        limits: RequestLimits = DEFAULT_LIMITS,
        head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S,
        certificates: Sequence[Path] = ()) -> None:
    """Serve until gunicorn is told to stop (SIGTERM/SIGINT); exits the process."""
    worker = ExtenderWorker(build, debug_endpoints=debug_endpoints, monitoring=monitoring,
                            limits=limits, head_timeout_s=head_timeout_s,
                            certificates=certificates)
    GunicornApp(settings, worker.load, stop=worker.stop, head_timeout_s=head_timeout_s).run()
