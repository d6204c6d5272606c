"""A tiny stand-in scheduler extender for the localcluster self-tests (not the gpu-extender).

    python stub_extender.py PORT

Speaks the extender protocol at the server root like the real one: filter keeps nodes whose
name contains "gpu", prioritize gives 10 to the alphabetically last candidate and 0 to the others,
bind posts the Binding with the identity in $KUBECONFIG. GET /readyz answers 200, GET /calls
returns how often each verb was called.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubernetes import client, config


class StubExtender:
    def __init__(self) -> None:
        self.core = client.CoreV1Api(config.new_client_from_config())
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def handle(self, verb: str, args: dict[str, Any]) -> Any:
        with self.lock:
            self.calls[verb] += 1
        names: list[str] = args.get("NodeNames") or []
        if verb == "filter":
            return {
                "NodeNames": [name for name in names if "gpu" in name],
                "FailedNodes": {name: "stub: no GPUs" for name in names if "gpu" not in name},
                "Error": "",
            }
        if verb == "prioritize":
            best = max(names, default="")
            return [{"Host": name, "Score": 10 if name == best else 0} for name in names]
        if verb == "bind":
            return {"Error": self.bind(args)}
        raise KeyError(verb)

    def bind(self, args: dict[str, Any]) -> str:
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(
                name=args["PodName"], namespace=args["PodNamespace"], uid=args["PodUID"]
            ),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=args["Node"]),
        )
        try:
            # The server answers with a Status, which the client cannot parse as V1Binding.
            self.core.create_namespaced_pod_binding(
                args["PodName"], args["PodNamespace"], body, _preload_content=False
            )
        except client.exceptions.ApiException as error:
            return f"binding failed: {error.status} {error.reason}"
        return ""


def make_handler(stub: StubExtender) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/readyz":
                self.reply(200, "ok")
            elif self.path == "/calls":
                with stub.lock:
                    self.reply(200, dict(stub.calls))
            else:
                self.reply(404, "not found")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            args = json.loads(self.rfile.read(length) or b"{}")
            try:
                self.reply(200, stub.handle(self.path.strip("/"), args))
            except KeyError:
                self.reply(404, "unknown verb")

        def reply(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def main() -> None:
    port = int(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(StubExtender()))
    server.serve_forever()


if __name__ == "__main__":
    main()
