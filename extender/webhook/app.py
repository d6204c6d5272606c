"""The webhook's Flask app: POST /validate and /mutate (AdmissionReview v1), GET /healthz and
/metrics.

A body that is not an AdmissionReview gets HTTP 400 with the reason (the API server then applies
the failure policy). Anything unexpected while judging a pod is logged with its traceback and
the pod is *allowed* unchanged: a bug here must not block pod creation, and the extender still
checks the request at filter time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import orjson
from flask import Flask, Response, request
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.exceptions import HTTPException

from extender.platform import Platform
from extender.webhook.admit import Answer, PodAdmission
from extender.webhook.evictions import AgentEvictions
from extender.webhook.metrics import WebhookMetrics
from extender.webhook.pools import NodePools
from extender.webhook.review import AdmissionRequest, ReviewError, decode_review, encode_response
from extender.webhook.trust import DEFAULT_TRUSTED_USERS

_log = logging.getLogger(__name__)
JSON = "application/json"
MAX_BODY_BYTES = 3 * 1024 * 1024
"""The API server's own request limit for one object is 3 MiB."""


def _json(document: object, status: int = 200) -> Response:
    return Response(orjson.dumps(document), status=status, content_type=JSON)


def create_app(platform: Platform,
               trusted_users: Collection[str] = DEFAULT_TRUSTED_USERS, *,
               dra_mapped: frozenset[str] = frozenset(), first_available: bool = False,
               certificates: Sequence[Path] = (), pools: NodePools | None = None,
               evictions: AgentEvictions | None = None) -> Flask:
    """``trusted_users``: who may write the GPU annotations (``trust.py``); ``dra_mapped``,
    ``first_available``: the DRA checks (docs/dra.md); ``certificates``: the serving
    certificates whose expiry /metrics exports; ``pools``: the watched nodes (``pools.py``);
    ``evictions``: the node agent's Evictions (``evictions.py``)."""
    app = Flask("gpu-extender-webhook")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    admission = PodAdmission(platform, trusted_users, dra_mapped=dra_mapped,
                             first_available=first_available, pools=pools,
                             evictions=evictions)
    metrics = WebhookMetrics(certificates)
    app.add_url_rule("/validate", "validate", _review_view("validate", admission.validate,
                                                           metrics), methods=["POST"])
    app.add_url_rule("/mutate", "mutate", _review_view("mutate", admission.mutate, metrics),
                     methods=["POST"])

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:  # stateless: ready once the app is loaded in the worker
        return _json({"status": "ready"})

    @app.get("/metrics")
    def metrics_view() -> Response:
        return Response(metrics.exposition(), content_type=CONTENT_TYPE_LATEST)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return _json({"error": f"{exc.code} {exc.name}: {exc.description}"}, exc.code or 500)

    return app


def _review_view(endpoint: str, judge: Callable[[AdmissionRequest], Answer],
                 metrics: WebhookMetrics) -> Callable[[], Response]:
    observe = metrics.observe[endpoint]

    def view() -> Response:
        started = time.perf_counter()
        try:
            review = decode_review(request.get_data(cache=False))
        except ReviewError as exc:
            metrics.review(endpoint, "malformed")
            _log.warning("malformed review", extra={"fields": {"endpoint": endpoint,
                                                               "error": str(exc)}})
            return _json({"error": str(exc)}, 400)
        try:
            answer = judge(review)
        except Exception:
            _log.exception("review failed", extra={"fields": {"endpoint": endpoint,
                                                              "uid": review.uid}})
            answer = Answer(True, "error")
        body = encode_response(review.uid, allowed=answer.allowed, message=answer.message,
                               patch=answer.patch, warnings=answer.warnings)
        metrics.review(endpoint, answer.outcome)
        observe(time.perf_counter() - started)
        if not answer.allowed:
            _log.info("refused", extra={"fields": {"namespace": review.namespace,
                                                   "uid": review.uid,
                                                   "reason": answer.message}})
        return Response(body, status=200, content_type=JSON)

    view.__name__ = f"{endpoint}_view"
    return view
