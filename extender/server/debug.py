"""Read-only endpoints for people: what the extender believes, and why a pod does (not) fit.

- ``GET /debug/inventory[?node=NAME]``: every node, GPU and holding as JSON (404 for a node
  the inventory does not know; schema in docs/debug-inventory.md);
- ``POST /debug/explain``: body is a Pod (or ExtenderArgs with ``Pod`` and ``NodeNames``):
  the verdict, reason and score on every node (or the named ones);
- ``GET /debug/explain/<namespace>/<name>``: the same for a pod the API (or the offline file)
  knows.

None of them changes state (explain does not reserve, and does not teach the workload mix).
"""

from __future__ import annotations

from typing import Any

import orjson
from flask import Flask, Response, request

from extender.apiserver.errors import KubeError, NotFound
from extender.inventory.report import inventory_report
from extender.server.responses import json_response
from extender.server.service import ExtenderService
from extender.server.wire import WireError


def register_debug_routes(app: Flask, service: ExtenderService) -> None:
    @app.get("/debug/inventory")
    def debug_inventory() -> Response:
        node = request.args.get("node")
        report = inventory_report(service.inventory, node)
        if node is not None and not report["nodes"] and not report["holdingsOnUnknownNodes"]:
            known = service.inventory.node_names()
            return json_response({"Error": f"node {node!r} is not in the inventory "
                                           f"({len(known)} nodes known, e.g. "
                                           f"{', '.join(known[:5]) or 'none'})"}, 404)
        return json_response(report)

    @app.post("/debug/explain")
    def debug_explain() -> Response:
        try:
            pod, names = _explain_args(request.get_data(cache=False))
        except WireError as exc:
            return json_response({"Error": str(exc)}, 400)
        return json_response(service.verbs.explain(pod, names))

    @app.get("/debug/explain/<namespace>/<name>")
    def debug_explain_known(namespace: str, name: str) -> Response:
        try:
            pod = service.find_pod(namespace, name)
        except NotFound:
            return json_response({"Error": f"pod {namespace}/{name} not found"}, 404)
        except KubeError as exc:
            return json_response({"Error": f"cannot read pod {namespace}/{name}: {exc}"}, 502)
        return json_response(service.verbs.explain(pod))


def _explain_args(body: bytes) -> tuple[dict[str, Any], list[str] | None]:
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError as exc:
        raise WireError("body", f"not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise WireError("body", "expected a Pod object or {\"Pod\": ..., \"NodeNames\": [...]}")
    if "Pod" not in doc:
        return doc, None
    pod, names = doc["Pod"], doc.get("NodeNames")
    if not isinstance(pod, dict):
        raise WireError("Pod", "must be a Pod object")
    if names is not None and (not isinstance(names, list)
                              or not all(isinstance(n, str) for n in names)):
        raise WireError("NodeNames", "must be a list of node names")
    return pod, names
