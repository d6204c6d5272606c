"""The verbs' routes as plain WSGI in front of Flask: POST /filter, /prioritize, /bind and
/preempt are answered here, everything else goes on to the Flask app.

Why: kube-scheduler makes three requests per pod, and Flask's machinery around a view (request
and app contexts, the werkzeug ``Request`` and ``Response`` objects, routing, signals, the
limited stream) cost about as much Python as the view's own wire work (py-spy at 1,000 nodes:
~7 % of the worker's samples; ``benchmarks/bench_http.py`` times both paths per call). The
contract is the same as it was under Flask:

- HTTP 200 with the verb's JSON, or its protocol failure (``Error`` for filter and bind, no
  priorities, no victims) when the verb raised: logged with its traceback here, never sent;
- 400 naming the field of a body that does not match the protocol, 413 for a body over
  ``--max-body-bytes`` (refused before it is read when its length is announced, stopped at
  the limit when chunked), 408 for one that does not arrive within
  ``--body-read-timeout``, 405 (``Allow: POST``) for another method;
- the latency histogram and the decision counters per call, the debug log line.

``create_app`` also offers the routes to the head-deadline worker (``runtime.direct``): for the
plain heads kube-scheduler sends, the worker reads the body itself and calls ``answer_body``
(the same decode, handle, metrics and log line as the WSGI path after its body read),
``answer_late`` for a body past ``--body-read-timeout``; every other request comes here as
WSGI.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import orjson

from extender.kube.objects import pod_key
from extender.server.answers import Answer
from extender.server.limits import RequestLimits
from extender.server.metrics import ExtenderMetrics
from extender.server.wire import WireError

_log = logging.getLogger(__name__)

Args = TypeVar("Args")
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
JSON_HEADER = ("Content-Type", "application/json")
STATUS = {200: "200 OK", 400: "400 Bad Request", 405: "405 Method Not Allowed",
          408: "408 Request Timeout", 413: "413 Request Entity Too Large",
          500: "500 Internal Server Error"}


class BodyTooLargeError(Exception):
    pass


class VerbRoute(Generic[Args]):
    """One verb: read the body (with its deadline), decode, handle, answer."""

    def __init__(self, verb: str, decode: Callable[[bytes], Args],
                 handle: Callable[[Args], Answer], failure: Callable[[Args, str], Answer], *,
                 metrics: ExtenderMetrics, limits: RequestLimits, inline: bool = False,
                 after: Callable[[], None] | None = None) -> None:
        """``inline``: the worker may answer it on its event-loop thread (``runtime.direct``):
        short CPU-only verbs that kube-scheduler calls one at a time (filter, prioritize).
        ``after``: work the answer does not wait for, run once it is sent (``after_answer``:
        the worker calls it; on the WSGI path the body's ``close``, which the server calls
        once the body is written)."""
        self.verb = verb
        self._decode = decode
        self._handle = handle
        self._failure = failure
        self._metrics = metrics
        self._observe = metrics.observe_latency[verb]
        self._add_cpu = metrics.add_cpu[verb]
        self._limits = limits
        self.inline = inline
        self._after = after

    # -- what the head-deadline worker calls directly (``runtime.direct.DirectRoute``) -------

    @property
    def max_body_bytes(self) -> int:
        return self._limits.max_body_bytes

    @property
    def body_read_timeout_s(self) -> float:
        return self._limits.body_read_timeout_s

    def after_answer(self) -> None:
        """``after`` (work no answer waits for), its CPU counted as this verb's; never
        raises."""
        if self._after is None:
            return
        cpu_started = time.thread_time()
        try:
            self._after()
        except Exception:
            _log.exception("work after the answer failed", extra={"fields": {"verb": self.verb}})
        self._add_cpu(time.thread_time() - cpu_started)

    def answer_late(self, received: int, length: int) -> tuple[int, bytes]:
        self._metrics.decision(self.verb, "malformed")
        return 408, _error(f"body: not received within "
                           f"{self._limits.body_read_timeout_s:g} s")

    def answer_body(self, body: bytes) -> tuple[int, bytes]:
        try:
            return self._answer_body(body, time.perf_counter())
        except Exception as exc:  # a bug here must still never send a traceback
            _log.exception("request failed", extra={"fields": {"path": self.verb}})
            return 500, _error(f"internal error: {type(exc).__name__}")

    # -- the WSGI side -------------------------------------------------------------------------

    def answer(self, environ: Mapping[str, Any]) -> tuple[int, bytes]:
        started = time.perf_counter()
        try:
            body = read_body(environ, self._limits)
        except TimeoutError:
            return self.answer_late(0, 0)
        except BodyTooLargeError as exc:
            self._metrics.decision(self.verb, "malformed")
            return 413, _error(f"413 Request Entity Too Large: body: {exc}")
        return self._answer_body(body, started)

    def _answer_body(self, body: bytes, started: float) -> tuple[int, bytes]:
        verb, metrics = self.verb, self._metrics
        cpu_started = time.thread_time()  # the whole call runs on this thread
        try:
            args = self._decode(body)
        except WireError as exc:
            metrics.decision(verb, "malformed")
            _log.warning("malformed request", extra={"fields": {"verb": verb,
                                                                 "error": str(exc)}})
            return 400, _error(str(exc))
        try:
            result = self._handle(args)
        except Exception as exc:
            metrics.decision(verb, "error")
            _log.exception("verb failed", extra={"fields": {"verb": verb,
                                                            "pod": describe(args)}})
            result = self._failure(args, f"internal error in {verb}: {type(exc).__name__}: "
                                         f"{exc}")
        duration = time.perf_counter() - started
        self._observe(duration)
        self._add_cpu(time.thread_time() - cpu_started)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("answered", extra={"fields": {
                "verb": verb, "pod": describe(args),
                "duration_ms": round(duration * 1000, 3)}})
        return 200, result.body


class VerbRoutes:
    """The WSGI app: the verbs' paths here, the rest to ``fallback`` (the Flask app)."""

    def __init__(self, fallback: WsgiApp, routes: Iterable[VerbRoute[Any]]) -> None:
        self._fallback = fallback
        self._routes = {f"/{route.verb}": route for route in routes}

    @property
    def routes(self) -> dict[str, VerbRoute[Any]]:
        """Path -> route (what the worker may answer directly: ``runtime.direct``)."""
        return dict(self._routes)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        route = self._routes.get(environ.get("PATH_INFO", ""))
        if route is None:
            return self._fallback(environ, start_response)
        headers = [JSON_HEADER]
        if environ.get("REQUEST_METHOD") != "POST":
            status, body = 405, _error("405 Method Not Allowed: the method is not allowed "
                                       "for the requested URL (POST only).")
            headers.append(("Allow", "POST"))
        else:
            try:
                status, body = route.answer(environ)
            except Exception as exc:  # a bug here must still never send a traceback
                _log.exception("request failed", extra={"fields": {"path": route.verb}})
                status, body = 500, _error(f"internal error: {type(exc).__name__}")
        headers.append(("Content-Length", str(len(body))))
        start_response(STATUS[status], headers)
        return _Body(body, route.after_answer)


class _Body(list[bytes]):
    """A WSGI body whose ``close`` (the server calls it once the body is sent, PEP 3333)
    runs the route's work after the answer."""

    def __init__(self, body: bytes, after: Callable[[], None]) -> None:
        super().__init__([body])
        self._after = after

    def close(self) -> None:
        self._after()


def read_body(environ: Mapping[str, Any], limits: RequestLimits) -> bytes:
    """The body, read with a deadline on the connection (gunicorn hands us its socket; it
    resets the socket's blocking mode itself before the next request on the connection).
    Raises ``TimeoutError`` (not all of it in time) or ``BodyTooLargeError``."""
    stream = environ["wsgi.input"]
    limit = limits.max_body_bytes
    announced = environ.get("CONTENT_LENGTH") or ""
    length = int(announced) if announced.isdigit() else None
    if length is not None and length > limit:
        raise BodyTooLargeError(f"{length} bytes announced, the limit is {limit} "
                           "(--max-body-bytes)")
    sock = environ.get("gunicorn.socket")
    if sock is not None:
        sock.settimeout(limits.body_read_timeout_s)
    chunked = length is None and environ.get("wsgi.input_terminated", False)
    try:
        # gunicorn's body reader turns socket.timeout into a short read
        data = stream.read(length if length is not None else limit + 1) \
            if length is not None or chunked else b""
    except OSError as exc:  # socket.timeout is a TimeoutError, a reset an OSError
        raise TimeoutError(str(exc)) from exc
    if length is not None and len(data) < length:
        raise TimeoutError(f"{len(data)} of {length} bytes")
    if len(data) > limit:
        raise BodyTooLargeError(f"over the limit of {limit} bytes (--max-body-bytes)")
    return bytes(data)


def describe(args: object) -> str:
    if isinstance(args, dict) and isinstance(args.get("Pod"), dict):
        return str(pod_key(args["Pod"]))
    if isinstance(args, dict) and "PodName" in args:
        return f"{args.get('PodNamespace')}/{args.get('PodName')}"
    return ""


def _error(message: str) -> bytes:
    return orjson.dumps({"Error": message})
