"""The Flask app: routes, wire decoding, metrics and the never-a-traceback guarantee.

Every verb answers HTTP 200 with PascalCase JSON, except a body that does not match the
protocol (400, the message names the field), one over the size limit (413) and one that does not
arrive in time (408; see ``limits``). An unexpected exception inside a verb is logged
with its traceback here and answered as the protocol expects a failure: ``Error`` for filter
and bind, an empty priority list for prioritize (kube-scheduler ignores prioritize errors).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from flask import Flask, Response, request
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.exceptions import ClientDisconnected, HTTPException

from extender.kube.objects import pod_key
from extender.server.answers import Answer, encode_document
from extender.server.debug import register_debug_routes
from extender.server.limits import DEFAULT_LIMITS, RequestLimits
from extender.server.preempt_verb import NO_VICTIMS
from extender.server.preempt_wire import decode_preemption_args
from extender.server.responses import JSON, json_response
from extender.server.service import ExtenderService
from extender.server.verbs import NO_PRIORITIES
from extender.server.wire import (
    ExtenderBindingResult,
    WireError,
    decode_binding_args,
    decode_extender_args,
    filter_error,
)

_log = logging.getLogger(__name__)

Args = TypeVar("Args")


def create_app(service: ExtenderService, *, debug_endpoints: bool = True,
               limits: RequestLimits = DEFAULT_LIMITS) -> Flask:
    app = Flask("gpu-extender")
    app.config["MAX_CONTENT_LENGTH"] = limits.max_body_bytes
    verbs = service.verbs

    app.add_url_rule("/filter", "filter", _verb_view(
        service, "filter", decode_extender_args, verbs.filter,
        lambda args, message: encode_document(filter_error(args, message)), limits=limits),
        methods=["POST"])
    app.add_url_rule("/prioritize", "prioritize", _verb_view(
        service, "prioritize", decode_extender_args, verbs.prioritize,
        lambda args, message: NO_PRIORITIES, limits=limits), methods=["POST"])
    app.add_url_rule("/bind", "bind", _verb_view(
        service, "bind", decode_binding_args, verbs.bind,
        lambda args, message: encode_document(ExtenderBindingResult(Error=message)), limits=limits),
        methods=["POST"])

    # a failed preempt answers no victims: kube-scheduler then evicts nothing for this pod
    app.add_url_rule("/preempt", "preempt", _verb_view(
        service, "preempt", decode_preemption_args, service.preempt,
        lambda args, message: NO_VICTIMS, limits=limits), methods=["POST"])

    @app.get("/healthz")
    def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        if service.ready():
            return json_response({"status": "ready"})
        return json_response({"status": "inventory not synced yet"}, 503)

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(service.metrics.exposition(), content_type=CONTENT_TYPE_LATEST)

    if debug_endpoints:
        register_debug_routes(app, service)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return json_response({"Error": f"{exc.code} {exc.name}: {exc.description}"},
                             exc.code or 500)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        _log.exception("request failed", extra={"fields": {"path": request.path}})
        return json_response({"Error": f"internal error: {type(exc).__name__}"}, 500)

    return app


def _verb_view(service: ExtenderService, verb: str, decode: Callable[[bytes], Args],
               handle: Callable[[Args], Answer], failure: Callable[[Args, str], Answer],
               *, limits: RequestLimits) -> Callable[[], Response]:
    observe = service.metrics.observe_latency[verb]
    metrics = service.metrics

    def view() -> Response:
        started = time.perf_counter()
        try:
            body = _read_body(limits)
        except TimeoutError:
            metrics.decision(verb, "malformed")
            return json_response({"Error": f"body: not received within "
                                           f"{limits.body_read_timeout_s:g} s"}, 408)
        try:
            args = decode(body)
        except WireError as exc:
            metrics.decision(verb, "malformed")
            _log.warning("malformed request", extra={"fields": {"verb": verb,
                                                                 "error": str(exc)}})
            return json_response({"Error": str(exc)}, 400)
        try:
            result = handle(args)
        except Exception as exc:
            metrics.decision(verb, "error")
            _log.exception("verb failed", extra={"fields": {"verb": verb,
                                                            "pod": _describe(args)}})
            result = failure(args, f"internal error in {verb}: {type(exc).__name__}: {exc}")
        body = result.body
        duration = time.perf_counter() - started
        observe(duration)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("answered", extra={"fields": {
                "verb": verb, "pod": _describe(args),
                "duration_ms": round(duration * 1000, 3)}})
        return Response(body, status=200, content_type=JSON)

    view.__name__ = f"{verb}_view"
    return view


def _read_body(limits: RequestLimits) -> bytes:
    """The body, read with a deadline on the connection (gunicorn hands us its socket; it resets
    the socket's blocking mode itself before the next request on the connection)."""
    sock = request.environ.get("gunicorn.socket")
    if sock is not None:
        sock.settimeout(limits.body_read_timeout_s)
    try:
        return request.get_data(cache=False)
    except (OSError, ClientDisconnected) as exc:
        # socket.timeout is a TimeoutError; gunicorn's body reader turns it into a short
        # read, which werkzeug reports as ClientDisconnected
        raise TimeoutError(str(exc)) from exc


def _describe(args: object) -> str:
    if isinstance(args, dict) and isinstance(args.get("Pod"), dict):
        return str(pod_key(args["Pod"]))
    if isinstance(args, dict) and "PodName" in args:
        return f"{args.get('PodNamespace')}/{args.get('PodName')}"
    return ""

