"""The cheapest extender kube-scheduler can call: bench_scheduler's ``floor`` modes (issue 22).

It speaks the same protocol as ``gpu-extender serve`` under the shipped scheduler profile and
gives kube-scheduler the same shape of work, but decides nothing:

- ``POST /filter``: the first two of the ``NodeNames`` sent, the others dropped (the shape of
  the exact cut's answer on a burst of one-GPU pods: ``score_cut_nodes{kept}`` = 2 per pod);
- ``POST /prioritize``: the first node 10, the second 0;
- ``POST /bind``: one Binding POST on a kept-alive HTTPS connection (orjson body), the answer
  after the API server's;
- with ``--events``: one Normal event per bind, written by one thread from a queue after the
  bind has answered (the extender's event-on-every-placement guarantee, at its cheapest).

No watch, no inventory, no metrics. Whatever ``floor`` costs kube-scheduler, the API server
and etcd is what any HTTP extender with a bind verb costs them in this pipeline; ``extender``
minus ``floor-events`` is what this project's Python adds on top.

    python benchmarks/floor_extender.py --port 8888 [--events]   # KUBECONFIG: the identity

The HTTP side is one thread per connection reading ``Content-Length`` bodies (kube-scheduler
sends no chunked or pipelined requests); anything else is answered 400 and the connection
closed. A bench tool, not a server to deploy.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import http.client
import os
import queue
import re
import socket
import ssl
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import yaml

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)", re.IGNORECASE)
_REQUEST_LINE = re.compile(rb"^(GET|POST) (\S+) HTTP/1\.1\r\n")
MAX_HEAD = 16 * 1024
MAX_BODY = 64 * 1024 * 1024


class ApiServer:
    """Kept-alive HTTPS connections to the API server, one per calling thread."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        server = cluster["server"].removeprefix("https://")
        self._host, _, port = server.partition(":")
        self._port = int(port or 443)
        self._context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self._context.load_cert_chain(user["client-certificate"], user["client-key"])
        self._local = threading.local()

    def post(self, path: str, document: dict[str, Any]) -> tuple[int, bytes]:
        body = orjson.dumps(document)
        for attempt in (0, 1):  # a kept-alive connection the server closed: one fresh retry
            connection = getattr(self._local, "connection", None)
            if connection is None:
                connection = http.client.HTTPSConnection(self._host, self._port,
                                                         context=self._context, timeout=30)
                self._local.connection = connection
            try:
                connection.request("POST", path, body,
                                   {"Content-Type": "application/json"})
                answer = connection.getresponse()
                return answer.status, answer.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                self._local.connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


class Floor:
    def __init__(self, api: ApiServer, *, events: bool) -> None:
        self._api = api
        self._events: queue.Queue[tuple[str, str, str, str]] | None = (
            queue.Queue(maxsize=10_000) if events else None)
        self.stop = threading.Event()

    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"NodeNames": (args.get("NodeNames") or [])[:2], "FailedNodes": {},
                "FailedAndUnresolvableNodes": {}, "Error": ""}

    def prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"Host": name, "Score": 10 if i == 0 else 0}
                for i, name in enumerate((args.get("NodeNames") or [])[:2])]

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        namespace, name, node = args["PodNamespace"], args["PodName"], args["Node"]
        status, body = self._api.post(
            f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
            {"apiVersion": "v1", "kind": "Binding",
             "metadata": {"name": name, "namespace": namespace, "uid": args.get("PodUID")},
             "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        if status >= 300:
            return {"Error": f"binding {namespace}/{name}: HTTP {status}: {body[:200]!r}"}
        if self._events is not None:
            with contextlib.suppress(queue.Full):  # as the extender's queue: drop, never wait
                self._events.put_nowait((namespace, name, args.get("PodUID") or "", node))
        return {"Error": ""}

    def write_events(self) -> None:
        assert self._events is not None
        while not self.stop.is_set():
            try:
                namespace, name, uid, node = self._events.get(timeout=0.5)
            except queue.Empty:
                continue
            now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            self._api.post(f"/api/v1/namespaces/{namespace}/events", {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{name}.", "namespace": namespace},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name,
                                   "namespace": namespace, "uid": uid},
                "reason": "GPUAssigned", "message": f"floor: placed on {node}",
                "type": "Normal", "source": {"component": "floor-extender"},
                "firstTimestamp": now, "lastTimestamp": now, "count": 1})


def serve_connection(floor: Floor, sock: socket.socket) -> None:
    routes = {b"/filter": floor.filter, b"/prioritize": floor.prioritize, b"/bind": floor.bind}
    pending = b""
    with sock:
        while True:
            while b"\r\n\r\n" not in pending:
                chunk = sock.recv(65536)
                if not chunk or len(pending) > MAX_HEAD:
                    return
                pending += chunk
            head, _, pending = pending.partition(b"\r\n\r\n")
            line = _REQUEST_LINE.match(head + b"\r\n")
            length_match = _CONTENT_LENGTH.search(head)
            length = int(length_match.group(1)) if length_match else 0
            if line is None or length > MAX_BODY:
                sock.sendall(_response(400, b'{"Error": "bad request"}', close=True))
                return
            while len(pending) < length:
                chunk = sock.recv(max(65536, length - len(pending)))
                if not chunk:
                    return
                pending += chunk
            body, pending = pending[:length], pending[length:]
            method, path = line.group(1), line.group(2)
            if method == b"GET":
                sock.sendall(_response(200 if path == b"/readyz" else 404, b"ok"))
                continue
            handler = routes.get(path)
            if handler is None:
                sock.sendall(_response(404, b'{"Error": "no such verb"}'))
                continue
            try:
                answer = orjson.dumps(handler(orjson.loads(body)))
            except (KeyError, TypeError, ValueError, OSError,
                    http.client.HTTPException) as exc:
                answer = orjson.dumps({"Error": f"floor: {type(exc).__name__}: {exc}"})
            sock.sendall(_response(200, answer))


def _response(status: int, body: bytes, *, close: bool = False) -> bytes:
    return (b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
            % (status, len(body), b"Connection: close\r\n" if close else b"")) + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--events", action="store_true",
                        help="one Normal event per bind, written off the bind path")
    args = parser.parse_args(argv)
    kubeconfig = os.environ.get("KUBECONFIG")
    if not kubeconfig:
        print("floor_extender: KUBECONFIG must name the identity that binds", file=sys.stderr)
        return 2
    floor = Floor(ApiServer(Path(kubeconfig)), events=args.events)
    if args.events:
        threading.Thread(target=floor.write_events, name="events", daemon=True).start()
    listener = socket.create_server((args.host, args.port), backlog=128)
    try:
        while True:
            sock, _ = listener.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=serve_connection, args=(floor, sock), daemon=True).start()
    except KeyboardInterrupt:
        return 0
    finally:
        floor.stop.set()
        listener.close()


if __name__ == "__main__":
    raise SystemExit(main())
