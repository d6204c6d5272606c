"""``--url`` against the wrong process says so (``runtime.fetch``), for ``inspect``, ``explain``
and ``shadow --report``, on real servers: the extender's own app with its debug endpoints off
(Flask's 404 through the app's JSON error handler, what a chart default install answers), the
same app with them on, a side listener, and a port nobody listens on."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest
from werkzeug.serving import WSGIRequestHandler, make_server

from extender.cli import main
from extender.runtime.listener import SideListener, always_ok, health_route
from extender.server.app import create_app
from extender.server.service import ExtenderService
from tests.server.test_serve_offline import free_port

P = pytest.param


class _Quiet(WSGIRequestHandler):
    def log_request(self, *args: object, **kwargs: object) -> None:
        return  # no access log through whatever logging an earlier test configured


@contextlib.contextmanager
def _serve(app: object) -> Iterator[str]:
    httpd = make_server("127.0.0.1", 0, app, threaded=True,  # type: ignore[arg-type]
                        request_handler=_Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        thread.join(timeout=5)


@pytest.fixture
def urls(offline_service: ExtenderService) -> Iterator[dict[str, str]]:
    listener = SideListener({"/healthz": health_route(always_ok)}, "127.0.0.1", 0)
    listener.start()
    with contextlib.ExitStack() as stack:
        stack.callback(listener.stop)
        off = stack.enter_context(_serve(create_app(offline_service, debug_endpoints=False)))
        on = stack.enter_context(_serve(create_app(offline_service, debug_endpoints=True)))
        yield {"debug-off": off, "debug-on": on, "listener": f"http://127.0.0.1:{listener.port}",
               "nobody": f"http://127.0.0.1:{free_port()}"}


@pytest.mark.parametrize(("command", "server", "said"), [
    P(["inspect"], "debug-off",
      ["the extender does not serve /debug/inventory: its debug endpoints are off",
       "extender.debugEndpoints: true", "without --url inspect reads the cluster"],
      id="inspect, debug endpoints off (the chart's default)"),
    P(["explain", "ml/trainer-0"], "debug-off",
      ["the extender does not serve /debug/explain/ml/trainer-0: its debug endpoints are off",
       "without --url the pod is judged from the cluster itself"],
      id="explain, debug endpoints off"),
    P(["explain", "ml/nope"], "debug-on", ["404 pod ml/nope not found"],
      id="explain, a pod the extender does not know: the route's own 404"),
    P(["explain", "ml/trainer-0"], "nobody",
      ["cannot reach the extender", "port-forward deploy/gpu-extender 8888"],
      id="explain, nobody listens"),
    P(["shadow", "--report"], "debug-on",
      ["the shadow does not serve /report: not a shadow (it serves /report on port 8890)"],
      id="shadow --report, the extender's address"),
    P(["shadow", "--report"], "listener",
      ["the shadow does not serve /report: not a shadow"],
      id="shadow --report, a side listener without /report"),
    P(["shadow", "--report"], "nobody",
      ["cannot reach the shadow", "start one with `gpu-extender shadow`"],
      id="shadow --report, nobody listens"),
])
def test_the_wrong_address_is_named_with_what_to_do(
        urls: dict[str, str], command: list[str], server: str, said: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    url = urls[server]
    assert main([*command, "--url", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: --url {url}: "), err
    for text in said:
        assert text in err, err
