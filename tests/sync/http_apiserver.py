"""A tiny HTTP server that answers like kube-apiserver for the handful of calls the extender
makes, so the real ``kubernetes`` client plumbing (``_preload_content=False``, content types,
chunked watch streams, the Binding's ``Status`` answer) is exercised without a cluster."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import orjson


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class FakeApiState:
    def __init__(self) -> None:
        self.nodes = [{"metadata": {"name": f"n{i}", "resourceVersion": str(10 + i)}}
                      for i in range(3)]
        self.pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ml", "uid": "u1",
                                                 "resourceVersion": "50"},
                                    "spec": {"containers": []}}
        self.watch_lines: list[bytes] = []
        self.watch_status = 200
        self.requests: list[tuple[str, str, dict[str, list[str]], dict[str, str], bytes]] = []
        self.peers: list[tuple[str, int]] = []
        """The client address of every request (one per connection kept alive)."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without this, on a kept-alive connection the
    # second waits for the client's delayed ACK (~40 ms; Go's API server sets it too)
    disable_nagle_algorithm = True
    state: FakeApiState

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, code: int, doc: object) -> None:
        body = orjson.dumps(doc)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(self) -> tuple[str, dict[str, list[str]], bytes]:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.state.requests.append((self.command, url.path, query, dict(self.headers), body))
        self.state.peers.append(self.client_address)
        return url.path, query, body

    def do_GET(self) -> None:
        path, query, _ = self._record()
        # the client sends Python booleans as "True"; the API server parses both spellings
        if path == "/api/v1/nodes" and query.get("watch", [""])[0].lower() == "true":
            self._watch()
        elif path == "/api/v1/nodes":
            if query.get("continue") == ["page2"]:
                self._reply(200, {"kind": "NodeList", "metadata": {"resourceVersion": "999"},
                                  "items": self.state.nodes[2:]})
            else:
                self._reply(200, {"kind": "NodeList",
                                  "metadata": {"resourceVersion": "100", "continue": "page2"},
                                  "items": self.state.nodes[:2]})
        elif path == "/api/v1/pods":
            self._reply(200, {"kind": "PodList", "metadata": {"resourceVersion": "120"},
                              "items": [self.state.pod]})
        elif path == "/api/v1/namespaces/ml/pods/p":
            self._reply(200, self.state.pod)
        else:
            self._reply(404, status(404, "NotFound", f"{path} not found"))

    def _watch(self) -> None:
        if self.state.watch_status != 200:
            self._reply(self.state.watch_status,
                        status(self.state.watch_status, "Expired", "too old resource version"))
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in self.state.watch_lines:
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_PATCH(self) -> None:
        path, _, body = self._record()
        if path != "/api/v1/namespaces/ml/pods/p":
            self._reply(404, status(404, "NotFound", "no such pod"))
            return
        patch = orjson.loads(body)
        if patch["metadata"].get("uid") != self.state.pod["metadata"]["uid"]:
            self._reply(409, status(409, "Conflict", "Precondition failed: UID"))
            return
        self.state.pod["metadata"].setdefault("annotations", {}).update(
            patch["metadata"]["annotations"])
        self._reply(200, self.state.pod)

    def do_POST(self) -> None:
        path, _, body = self._record()
        if path == "/api/v1/namespaces/ml/pods/p/binding":
            binding = orjson.loads(body)
            if self.state.pod["spec"].get("nodeName"):
                node = self.state.pod["spec"]["nodeName"]
                self._reply(409, status(409, "Conflict",
                                        f'pod p is already assigned to node "{node}"'))
                return
            self.state.pod["spec"]["nodeName"] = binding["target"]["name"]
            # what BindingREST.Create answers: a Status, not a Binding
            self._reply(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Success", "code": 201})
        elif path == "/api/v1/namespaces/ml/events":
            self._reply(201, orjson.loads(body))
        else:
            self._reply(404, status(404, "NotFound", "no such resource"))


@contextmanager
def fake_apiserver() -> Iterator[tuple[str, FakeApiState]]:
    state = FakeApiState()
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
