"""The side listener: a few read-only GET routes (``/healthz``, ``/readyz``, ``/metrics``,
``/report``) over plain HTTP, for kubelet probes and Prometheus, in every process (the
extender's ``--monitoring-address``, the shadow's report, the webhook's and the agent's
health and metrics).

It serves only the routes it is given, so exposing it on the pod network opens nothing that
can schedule, bind or admit. One thread per connection (``ThreadingHTTPServer``), so a slow
client delays nobody else; each connection's request line and headers must arrive within
``head_timeout_s`` (a reaper closes the socket otherwise, and every read also times out), so
stalled sockets do not pile up threads. ``SideListener`` owns its threads; ``stop`` ends them.

A route answers ``(status, body, content type)``; ``json_route`` and ``health_route`` build
the usual ones, so every process answers probes with the same bodies::

    {"status": "ok"}                 200  /healthz
    {"status": "ready"}              200  /readyz
    {"status": "<why not>"}          503
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from extender.runtime.background import yield_on_wakeup
from extender.runtime.command import DEFAULT_HEAD_TIMEOUT_S, flag_error

Answer = tuple[int, bytes, str]
Route = Callable[[], Answer]
JSON = "application/json"
PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


def json_answer(document: object, status: int = 200) -> Answer:
    return status, orjson.dumps(document), JSON


def health_route(check: Callable[[], str | None], ok: str = "ok") -> Route:
    """``check()`` returns ``None`` when healthy, else why not (the 503 body's status)."""

    def route() -> Answer:
        problem = check()
        if problem is None:
            return json_answer({"status": ok})
        return json_answer({"status": problem}, 503)

    return route


def always_ok() -> str | None:
    return None


def parse_address(text: str, flag: str = "--monitoring-address",
                  command: str = "gpu-extender serve") -> tuple[str, int]:
    """``HOST:PORT`` (``[::]:9090`` for IPv6) to a pair; raises ConfigError naming the flag."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise flag_error(flag, f"{text!r} is not HOST:PORT (e.g. 0.0.0.0:9090, or [::]:9090 "
                         "for IPv6) with a port in 1-65535", command)
    return host.strip("[]") or "0.0.0.0", int(port)


def check_bindable(host: str, port: int, flag: str = "--monitoring-address",
                   command: str = "gpu-extender serve") -> None:
    """Fail early, with the flag named, when the address cannot be bound (taken, or not an
    address of this machine); a gunicorn worker binds it for real after the fork."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise flag_error(flag, f"cannot listen on {host}:{port}: {exc.strerror}",
                             command) from exc


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restarted worker rebinds at once
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 routes: Mapping[str, Route], head_timeout_s: float) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.routes = routes
        self.head_timeout_s = head_timeout_s
        self.heads: dict[socket.socket, float] = {}
        """Connections whose head is being read -> their deadline (the reaper's list)."""
        self.heads_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        # a probe or a scrape can wait a moment; the serving thread cannot (runtime.background)
        yield_on_wakeup()
        super().process_request_thread(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: nothing idles here

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.head_timeout_s)  # every read and write
        with self.server.heads_lock:
            self.server.heads[self.connection] = time.monotonic() + self.server.head_timeout_s

    def parse_request(self) -> bool:
        with self.server.heads_lock:
            self.server.heads.pop(self.connection, None)
        return bool(super().parse_request())

    def finish(self) -> None:
        with self.server.heads_lock:
            self.server.heads.pop(self.connection, None)
        super().finish()

    def do_GET(self) -> None:  # http.server's name
        path = self.path.split("?", 1)[0]
        route = self.server.routes.get(path)
        if route is None:
            served = ", ".join(sorted(self.server.routes))
            self._send(*json_answer({"Error": f"{path!r} is not served here; try {served}"},
                                    404))
            return
        self._send(*route())

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:  # other methods: http.server's 501
        self._send(*json_answer({"Error": "only GET is served here"}, 405))

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return  # probes every few seconds; the processes log what matters


class SideListener:
    """Serves ``routes`` (path -> route) on ``host:port`` (port 0: any free port) from a
    thread it owns; the socket is bound in ``__init__`` (a taken port fails there)."""

    def __init__(self, routes: Mapping[str, Route], host: str, port: int, *,
                 name: str = "side-listener",
                 head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S) -> None:
        self._server = _Server((host, port), _Handler, dict(routes), head_timeout_s)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._server.serve_forever, name=name,
                                        daemon=True)
        self._reaper = threading.Thread(target=self._reap, name=f"{name}-reaper", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        self._reaper.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():  # shutdown() waits for a serve_forever that never ran
            self._server.shutdown()
            self._thread.join(timeout=5)
        if self._reaper.is_alive():
            self._reaper.join(timeout=5)
        self._server.server_close()

    def _reap(self) -> None:
        """Close connections whose head is late (a trickle of bytes resets each read's
        timeout, not this deadline)."""
        while not self._stopping.wait(0.25):
            now = time.monotonic()
            with self._server.heads_lock:
                late = [s for s, deadline in self._server.heads.items() if deadline <= now]
                for sock in late:
                    del self._server.heads[sock]
            for sock in late:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
