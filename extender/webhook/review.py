"""``admission.k8s.io/v1`` AdmissionReview on the wire, and the checks on the review itself.

The API server sends ``{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
"request": {"uid", "kind", "resource", "namespace", "operation", "object", ...}}`` and expects
the same apiVersion/kind back with ``response.uid`` equal to ``request.uid``, ``allowed``, and
optionally ``status`` (for a refusal), ``patchType: JSONPatch`` with ``patch`` (base64 of the
JSON Patch) and ``warnings``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from extender.errors import ExtenderError, JsonObjectError
from extender.jsonobj import load_object

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
MAX_WARNING_CHARS = 256
"""Longer warnings are cut: kubectl prints each on one line, and the API server truncates
long ones itself."""


class ReviewError(ExtenderError):
    """The body is not an AdmissionReview we can answer (answered with HTTP 400)."""


@dataclass(frozen=True)
class AdmissionRequest:
    uid: str
    kind: str
    """``request.kind.kind`` (``Pod``)."""
    namespace: str
    operation: str
    object: Mapping[str, Any]
    dry_run: bool = False
    old_object: Mapping[str, Any] | None = None
    """The pod before an UPDATE (``None`` on CREATE)."""
    username: str = ""
    """``request.userInfo.username``: who asks (trusted identities may write the GPU
    annotations, ``trust.py``)."""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """``request.userInfo.extra`` (a pod-bound token's node-name claim, ``evictions.py``)."""
    name: str = ""
    """``request.name``: the object's name (an Eviction's pod)."""
    sub_resource: str = ""
    """``request.subResource`` (``eviction``)."""


def decode_review(body: bytes) -> AdmissionRequest:
    try:
        review = load_object(body, "body")
    except JsonObjectError as exc:
        raise ReviewError(str(exc)) from exc
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise ReviewError(f"apiVersion/kind: must be {API_VERSION}/{KIND}, got "
                          f"{review.get('apiVersion')!r}/{review.get('kind')!r} (set "
                          f"admissionReviewVersions: [v1] in the webhook configuration)")
    request = review.get("request")
    if not isinstance(request, dict):
        raise ReviewError("request: must be an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError(f"request.uid: must be a non-empty string, got {uid!r}")
    kind = request.get("kind") or {}
    obj = request.get("object")
    old = request.get("oldObject")
    if not isinstance(kind, dict) or not isinstance(obj, dict | None) or \
            not isinstance(old, dict | None):
        raise ReviewError("request.kind, request.object and request.oldObject: must be objects")
    user = request.get("userInfo") or {}
    username = user.get("username") if isinstance(user, dict) else None
    raw_extra = user.get("extra") if isinstance(user, dict) else None
    extra = {str(k): tuple(str(v) for v in values) for k, values in raw_extra.items()
             if isinstance(values, list)} if isinstance(raw_extra, dict) else {}
    return AdmissionRequest(
        uid=uid,
        kind=str(kind.get("kind", "")),
        namespace=str(request.get("namespace") or ""),
        operation=str(request.get("operation") or ""),
        object=obj or {},
        dry_run=bool(request.get("dryRun")),
        old_object=old,
        username=username if isinstance(username, str) else "",
        extra=extra,
        name=str(request.get("name") or ""),
        sub_resource=str(request.get("subResource") or ""),
    )


def _warnings(warnings: Sequence[str]) -> list[str]:
    out = []
    for warning in warnings:
        text = " ".join(warning.split())  # the API server refuses control characters
        out.append(text if len(text) <= MAX_WARNING_CHARS else
                   text[:MAX_WARNING_CHARS - 3] + "...")
    return out


def encode_response(uid: str, *, allowed: bool = True, message: str = "", code: int = 403,
                    patch: Sequence[Mapping[str, Any]] = (),
                    warnings: Sequence[str] = ()) -> bytes:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": code, "message": message,
                              "reason": "Forbidden" if code == 403 else "BadRequest"}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(list(patch))).decode()
    if warnings:
        response["warnings"] = _warnings(warnings)
    return orjson.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response})
