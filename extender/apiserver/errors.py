"""Our own errors for talking to the API server.

Only ``extender.apiserver`` sees the Kubernetes client's exceptions (``ApiException``, urllib3's
connection errors); everything else catches these. ``translate`` keeps the original as
``__cause__`` so a traceback still shows what the client raised. The subclasses are named after
the HTTP statuses they stand for (as apimachinery's ``IsNotFound``, ``IsConflict``...), hence
no ``Error`` suffix.
"""

from __future__ import annotations

from typing import Any

import orjson

from extender.errors import ExtenderError


class KubeError(ExtenderError):
    """A call to the API server failed. ``status`` is the HTTP status (``None``: no answer,
    e.g. connection refused or a timeout)."""

    def __init__(self, message: str, *, status: int | None = None, reason: str = "") -> None:
        self.status = status
        self.reason = reason
        super().__init__(message)


class NotFound(KubeError):  # noqa: N818 - named after the HTTP status
    """404: the object does not exist (any more)."""


class Conflict(KubeError):  # noqa: N818 - named after the HTTP status
    """409: already exists, already bound, or a precondition (UID, resourceVersion) failed."""


class Gone(KubeError):  # noqa: N818 - named after the HTTP status
    """410: the resourceVersion is too old for a watch or a list continuation; relist."""


class TooManyRequests(KubeError):  # noqa: N818 - named after the HTTP status
    """429: the API server asks us to slow down."""


class Unavailable(KubeError):  # noqa: N818 - named after the HTTP status
    """No usable answer: connection refused or reset, timeout, or a 5xx."""


_BY_STATUS: dict[int, type[KubeError]] = {404: NotFound, 409: Conflict, 410: Gone,
                                          429: TooManyRequests}


def error_for_status(status: int, message: str, reason: str = "") -> KubeError:
    """The error class for an HTTP status (also used for watch ``ERROR`` events)."""
    cls = _BY_STATUS.get(status) or (Unavailable if status >= 500 else KubeError)
    return cls(message, status=status, reason=reason)


def translate(exc: BaseException, action: str) -> KubeError:
    """Turn whatever the client raised during ``action`` into one of ours, chained to it."""
    if isinstance(exc, KubeError):
        return exc
    status = getattr(exc, "status", None)
    if isinstance(status, int) and status > 0 and hasattr(exc, "body"):
        message, reason = status_message(getattr(exc, "body", None))
        text = f"{action}: HTTP {status}" + (f" {reason}" if reason else "") + \
            (f": {message}" if message else "")
        error = error_for_status(status, text, reason)
    else:
        error = Unavailable(f"{action}: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def status_message(body: object) -> tuple[str, str]:
    """``(message, reason)`` of a ``Status`` body, if the body is one."""
    if isinstance(body, str):
        body = body.encode()
    if not isinstance(body, bytes | bytearray):
        return "", ""
    try:
        doc: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode(errors="replace"), ""
    if not isinstance(doc, dict):
        return "", ""
    return str(doc.get("message", "")), str(doc.get("reason", ""))
