"""The Flask app: routes, wire decoding, metrics and the never-a-traceback guarantee (the
verbs themselves are answered in front of Flask, by ``verb_routes``).

Every verb answers HTTP 200 with PascalCase JSON, except a body that does not match the
protocol (400, the message names the field), one over the size limit (413) and one that does not
arrive in time (408; see ``limits``). An unexpected exception inside a verb is logged
with its traceback here and answered as the protocol expects a failure: ``Error`` for filter
and bind, an empty priority list for prioritize (kube-scheduler ignores prioritize errors).
"""

from __future__ import annotations

import logging

from flask import Flask, Response, request
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.exceptions import HTTPException

from extender.runtime.direct import offer_direct_routes
from extender.server.answers import encode_document
from extender.server.debug import register_debug_routes
from extender.server.limits import DEFAULT_LIMITS, RequestLimits
from extender.server.preempt_verb import NO_VICTIMS
from extender.server.preempt_wire import decode_preemption_args
from extender.server.responses import json_response
from extender.server.service import ExtenderService
from extender.server.verb_routes import VerbRoute, VerbRoutes
from extender.server.verbs import NO_PRIORITIES
from extender.server.wire import (
    ExtenderBindingResult,
    decode_binding_args,
    decode_extender_args,
    filter_error,
)

_log = logging.getLogger(__name__)


def create_app(service: ExtenderService, *, debug_endpoints: bool = True,
               limits: RequestLimits = DEFAULT_LIMITS) -> Flask:
    """The Flask app; its ``wsgi_app`` answers the verbs first (``verb_routes``: plain WSGI,
    the same contract) and hands every other path to Flask."""
    app = Flask("gpu-extender")
    app.config["MAX_CONTENT_LENGTH"] = limits.max_body_bytes
    verbs = service.verbs
    metrics = service.metrics
    routes = VerbRoutes(app.wsgi_app, [
        VerbRoute("filter", verbs.filter_args, verbs.filter,
                  lambda args, message: encode_document(filter_error(args, message)),
                  metrics=metrics, limits=limits, inline=True, after=verbs.warm_next),
        VerbRoute("prioritize", decode_extender_args, verbs.prioritize,
                  lambda args, message: NO_PRIORITIES, metrics=metrics, limits=limits,
                  inline=True, after=verbs.warm_next),
        VerbRoute("bind", decode_binding_args, verbs.bind,
                  lambda args, message: encode_document(ExtenderBindingResult(Error=message)),
                  metrics=metrics, limits=limits),
        # a failed preempt answers no victims: kube-scheduler then evicts nothing for this pod
        VerbRoute("preempt", decode_preemption_args, service.preempt,
                  lambda args, message: NO_VICTIMS, metrics=metrics, limits=limits),
    ])
    app.wsgi_app = routes  # type: ignore[method-assign]
    # the head-deadline worker answers the verbs' plain requests itself (runtime.direct)
    offer_direct_routes(app, routes.routes)

    @app.get("/healthz")
    def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        if service.ready():
            return json_response({"status": "ready"})
        return json_response({"status": "inventory not synced yet"}, 503)

    @app.get("/metrics")
    def exposition() -> Response:
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
