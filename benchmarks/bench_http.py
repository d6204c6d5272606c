"""What one verb request costs in HTTP plumbing, apart from the verb's own work (issue 22).

The handler is the same trivial one everywhere (read the body, answer 64 bytes), so what is
timed is the framework around it:

- ``wsgi``: in process, CPU per call of a Flask route (request context, werkzeug Request and
  Response, routing) against ``server.verb_routes`` (plain WSGI, what the verbs use), each
  called with a fresh WSGI environ and a body of ``--names`` node names (the NodeNames form of
  ExtenderArgs, ~20 bytes a name);
- ``gunicorn``: the same two apps under the real server settings (``runtime.gunicorn``: one
  worker, the head-deadline gthread worker), one kept-alive client posting the body; the
  server's CPU per request from ``/proc`` (master + worker), so gunicorn's own event loop,
  head parsing and thread hand-off are in it.

    .venv/bin/python benchmarks/bench_http.py                     # both parts, 1,000 names
    .venv/bin/python benchmarks/bench_http.py --part wsgi --calls 5000

Figures and the machine's load go in benchmarks/README.md (issue 22, session 2).
"""

from __future__ import annotations

import argparse
import http.client
import io
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from extender.runtime.direct import offer_direct_routes  # noqa: E402
from extender.server.answers import Answer  # noqa: E402
from extender.server.limits import DEFAULT_LIMITS  # noqa: E402
from extender.server.verb_routes import VerbRoute, VerbRoutes  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
ANSWER = Answer(orjson.dumps({"NodeNames": ["node-0"], "FailedNodes": {}, "Error": ""}))


class _Metrics:
    """What ``VerbRoute`` calls on the metrics, doing nothing."""

    def __init__(self) -> None:
        self.observe_latency = {"filter": lambda _: None}
        self.add_cpu = {"filter": lambda _: None}

    def decision(self, verb: str, outcome: str) -> None:
        pass


def body(names: int) -> bytes:
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u"}, "spec": {}}
    return orjson.dumps({"Pod": pod, "NodeNames": [f"node-{i:05d}" for i in range(names)]})


def flask_app() -> Any:
    from flask import Flask, Response, request

    app = Flask("bench")

    @app.post("/filter")
    def filter_view() -> Response:
        orjson.loads(request.get_data(cache=False))
        return Response(ANSWER.body, status=200, content_type="application/json")

    return app


def routes_app() -> Any:
    def not_found(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response("404 Not Found", [])
        return [b""]

    def handle(args: object) -> Answer:
        return ANSWER

    route = VerbRoute("filter", orjson.loads, handle, lambda a, m: ANSWER,
                      metrics=_Metrics(), limits=DEFAULT_LIMITS,  # type: ignore[arg-type]
                      inline=True)
    return VerbRoutes(not_found, [route])


def direct_app() -> Any:
    """``routes`` in front of Flask, offered to the worker as direct routes (what
    ``server.app`` does): the head-deadline worker answers them without gunicorn's parser."""
    from flask import Flask

    app = Flask("bench")
    routes = routes_app()
    app.wsgi_app = routes  # type: ignore[method-assign]
    offer_direct_routes(app, routes.routes)
    return app


APPS = {"flask": flask_app, "routes": routes_app, "direct": direct_app}


def _environ(data: bytes) -> dict[str, Any]:
    return {"REQUEST_METHOD": "POST", "PATH_INFO": "/filter", "SCRIPT_NAME": "",
            "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8888",
            "SERVER_PROTOCOL": "HTTP/1.1", "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(data)), "HTTP_HOST": "127.0.0.1:8888",
            "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(data),
            "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False,
            "wsgi.run_once": False, "wsgi.input_terminated": True}


def time_wsgi(app: Any, data: bytes, calls: int) -> float:
    """Median thread CPU microseconds per call over 5 rounds."""
    def start_response(status: str, headers: list[tuple[str, str]], exc: Any = None) -> None:
        pass

    rounds = []
    for _ in range(5):
        started = time.thread_time()
        for _ in range(calls // 5):
            out: Iterable[bytes] = app(_environ(data), start_response)
            b"".join(out)
            close = getattr(out, "close", None)
            if close is not None:
                close()
        rounds.append((time.thread_time() - started) * 1e6 / (calls // 5))
    return sorted(rounds)[2]


def serve(app_name: str, port: int, worker: str) -> None:
    """The child: the app under the extender's gunicorn settings (``worker``: ours, or
    gunicorn's own gthread for comparison)."""
    from extender.runtime.gunicorn import GunicornApp, common_settings

    settings = common_settings(name="bench-http", host="127.0.0.1", port=port, threads=8,
                               log_level="warning")
    if worker == "gthread":
        settings["worker_class"] = "gthread"
    GunicornApp(settings, APPS[app_name]).run()


def _tree_cpu(root: int) -> float:
    pids, frontier = [root], [root]
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == parent:
                    pids.append(int(entry))
                    frontier.append(int(entry))
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def time_gunicorn(app_name: str, data: bytes, calls: int, worker: str) -> float:
    """Server CPU microseconds per request (master + worker), kept-alive client."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, __file__, "--serve", app_name,
                               "--port", str(port), "--worker", worker], cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("POST", "/filter", body=data)
                conn.getresponse().read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for _ in range(50):  # warm
            conn.request("POST", "/filter", body=data)
            conn.getresponse().read()
        before = _tree_cpu(server.pid)
        for _ in range(calls):
            conn.request("POST", "/filter", body=data,
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            assert response.status == 200, response.status
        return (_tree_cpu(server.pid) - before) * 1e6 / calls
    finally:
        server.terminate()
        server.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["wsgi", "gunicorn", "both"], default="both")
    parser.add_argument("--names", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--serve", choices=sorted(APPS), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker", choices=["head-deadline", "gthread"], nargs="+",
                        default=["head-deadline"],
                        help="gunicorn worker class(es): ours, gunicorn's plain gthread")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port, args.worker[0])
        return 0
    data = body(args.names)
    print(f"# bench_http: {args.names} names ({len(data)} bytes), {args.calls} calls, "
          f"load {os.getloadavg()[0]:.1f}")
    if args.part in ("wsgi", "both"):
        for name, make in APPS.items():
            if name == "direct":
                continue  # the same WSGI app as routes; direct differs only under gunicorn
            print(f"wsgi     {name:7s} {time_wsgi(make(), data, args.calls):8.1f} us CPU/call",
                  flush=True)
    if args.part in ("gunicorn", "both"):
        for worker in args.worker:
            for name in APPS:
                cpu = time_gunicorn(name, data, args.calls, worker)
                print(f"gunicorn {name:7s} {worker:13s} {cpu:8.1f} us server CPU/request",
                      flush=True)
    print(f"# load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
