"""Flask responses for the non-verb endpoints (health, readiness, debug, HTTP errors)."""

from __future__ import annotations

import orjson
from flask import Response

JSON = "application/json"


def json_response(document: object, status: int = 200) -> Response:
    return Response(orjson.dumps(document), status=status, content_type=JSON)
