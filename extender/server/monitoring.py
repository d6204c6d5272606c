"""The monitoring listener: /healthz, /readyz and /metrics over plain HTTP on a second address.

The verbs listen where kube-scheduler expects them (loopback for a sidecar, TLS for a Service);
kubelet probes and Prometheus need an address on the pod IP, and must not need the scheduler's
client certificate. This listener serves only those three read-only paths, so exposing it on
the pod network opens nothing that can schedule or bind. It runs in the gunicorn worker (where
the service lives), in one thread owned by ``MonitoringServer`` and stopped with it.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import orjson
from prometheus_client import CONTENT_TYPE_LATEST

from extender.server.service import ExtenderService
from extender.server.tls import flag_error

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::]:9090`` for IPv6) to a pair; raises ConfigError naming the flag."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise flag_error("--monitoring-address", f"{text!r} is not HOST:PORT (e.g. 0.0.0.0:9090, "
                         "or [::]:9090 for IPv6) with a port in 1-65535")
    return host.strip("[]") or "0.0.0.0", int(port)


def check_bindable(host: str, port: int) -> None:
    """Fail in the master, with the flag named, when the address cannot be bound (taken, or
    not an address of this machine); the worker binds it for real after the fork."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise flag_error("--monitoring-address",
                             f"cannot listen on {host}:{port}: {exc.strerror}") from exc


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # probes every few seconds
        return


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True  # a restarted worker rebinds at once


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


def monitoring_app(service: ExtenderService) -> Callable[[dict[str, Any], StartResponse],
                                                          Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return _answer(start_response, "405 Method Not Allowed",
                           {"Error": "only GET is served here"})
        if path == "/healthz":
            return _answer(start_response, "200 OK", {"status": "ok"})
        if path == "/readyz":
            if service.ready():
                return _answer(start_response, "200 OK", {"status": "ready"})
            return _answer(start_response, "503 Service Unavailable",
                           {"status": "inventory not synced yet"})
        if path == "/metrics":
            body = service.metrics.exposition()
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST),
                                      ("Content-Length", str(len(body)))])
            return [body]
        return _answer(start_response, "404 Not Found",
                       {"Error": f"{path!r} is not served here; try /healthz, /readyz, "
                                 "/metrics"})
    return app


def _answer(start_response: StartResponse, status: str, document: object) -> list[bytes]:
    body = orjson.dumps(document)
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body)))])
    return [body]


class MonitoringServer:
    def __init__(self, service: ExtenderService, host: str, port: int) -> None:
        server_class = _ThreadingServer6 if ":" in host else _ThreadingServer
        self._server = make_server(host, port, monitoring_app(service),
                                   server_class=server_class, handler_class=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="monitoring-listener", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for a serve_forever that never ran
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
