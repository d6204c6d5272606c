"""A proxy between kube-scheduler and the extender that loses the first bind answer of a pod.

Usage: ``python bind_answer_proxy.py LISTEN_PORT UPSTREAM_PORT POD_NAME VERB -- EXTENDER...``

Starts the extender (``EXTENDER_COMMAND``, which must listen on ``UPSTREAM_PORT``) and forwards
every request to it, except the first ``/bind`` of ``POD_NAME``: kube-scheduler's connection is
closed at once without an answer (kube-scheduler forgets the pod and schedules it again), and the
bind is forwarded to the extender later, when that retried cycle's ``VERB`` (``prioritize`` or
``filter``) arrives: the Binding goes through between the retry's filter and its prioritize, or
just before its filter (where filter answers one node and holds it, kube-scheduler calls no
prioritize), as a slow bind whose answer timed out does. That request waits 1.5 s more, so that
the watch has shown the extender the pod bound; after it the proxy logs what the extender then
holds for the pod (its ``/debug/inventory``). Everything it does is logged on stderr (the
harness keeps the log).
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

WATCH_GRACE_S = 1.5


class _State:
    def __init__(self, upstream: int, pod: str, verb: str) -> None:
        self.upstream = upstream
        self.pod = pod
        self.verb = verb
        self.lock = threading.Lock()
        self.held: bytes | None = None
        self.dropped = False


def _forward(state: _State, method: str, path: str, body: bytes,
             headers: dict[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", state.upstream, timeout=30)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


def _pod_name(path: str, body: bytes) -> str:
    try:
        document: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return ""
    if not isinstance(document, dict):
        return ""
    if path.endswith("/bind"):
        return str(document.get("PodName") or "")
    pod = document.get("Pod") or {}
    return str((pod.get("metadata") or {}).get("name") or "") if isinstance(pod, dict) else ""


def _holdings_of(state: _State, name: str) -> str:
    """The pod's holdings as the extender's ``/debug/inventory`` reports them: ``node:state``."""
    try:
        _, _, body = _forward(state, "GET", "/debug/inventory", b"", {})
        report = orjson.loads(body)
    except (OSError, orjson.JSONDecodeError) as exc:
        return f"unknown ({exc})"
    held = [f"{h['node']}:{h['state']}" for node in report["nodes"]
            for h in node["holdings"] if h["pod"].endswith(f"/{name}")]
    return ",".join(held) or "nothing"


def handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _relay(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            name = _pod_name(self.path, body) if method == "POST" else ""
            with state.lock:
                drop = self.path.endswith("/bind") and name == state.pod and not state.dropped
                if drop:
                    state.dropped, state.held = True, body
                release = state.held if (self.path.endswith(f"/{state.verb}") and
                                         name == state.pod and not drop) else None
                if release is not None:
                    state.held = None
            if drop:
                self.log_message("dropped the answer of the first bind of %s", name)
                self.close_connection = True
                return  # closed without a status line: the answer is lost
            if release is not None:
                status, _, answer = _forward(state, "POST", "/bind", release,
                                             {"Content-Type": "application/json"})
                self.log_message("forwarded the held bind of %s late: %d %s", name, status,
                                 answer.decode(errors="replace"))
                # let the watch bring the bound pod to the extender before the retry's
                # request goes on (kube-scheduler waits up to its httpTimeout, 5 s)
                time.sleep(WATCH_GRACE_S)
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() in ("content-type", "accept")}
            try:
                status, response_headers, answer = _forward(state, method, self.path, body,
                                                            headers)
            except OSError as exc:  # the extender is not up yet
                status, response_headers, answer = 502, [], str(exc).encode()
            self.send_response(status)
            for key, value in response_headers:
                if key.lower() in ("content-type",):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            if release is not None:
                self.log_message("after the retried %s %s holds: %s", state.verb, name,
                                 _holdings_of(state, name))

        def do_GET(self) -> None:
            self._relay("GET")

        def do_POST(self) -> None:
            self._relay("POST")

    return Handler


def main(argv: list[str]) -> int:
    listen, upstream, pod, verb = int(argv[0]), int(argv[1]), argv[2], argv[3]
    command = argv[argv.index("--") + 1:]
    extender = subprocess.Popen(command)
    server = ThreadingHTTPServer(("127.0.0.1", listen), handler(_State(upstream, pod, verb)))
    server.daemon_threads = True
    try:
        server.serve_forever()
    finally:
        extender.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
