"""Direct routes: the few requests the head-deadline worker answers itself, without gunicorn's
request parser, WSGI environ and response object (issue 22).

kube-scheduler makes three kept-alive ``POST`` requests per pod (filter, prioritize, bind).
Under gunicorn each costs ~450-500 us of server CPU before and after the verb's own work: the
head parsed a second time in Python, the environ built, the hand-off to a pool thread and back,
the response object's header assembly (``benchmarks/bench_http.py``). A WSGI app may offer
routes that skip all of it: ``offer_direct_routes(app, routes)``; the worker then answers a
request on one of them itself when its head is the plain shape Go's client sends:

- ``POST <path> HTTP/1.1``, the path exactly one of the routes' (no query string);
- header names that are tokens and values of visible characters, no obsolete line folding;
- exactly one ``Content-Length`` (digits only) within the route's ``max_body_bytes``;
- no ``Transfer-Encoding``, ``Expect`` or ``Upgrade``.

Everything else (another method, a chunked or oversized body, an odd head) goes to gunicorn and
the WSGI app as before, which answers it (405, 413, 400 ...): what is direct is only the common
case, and its answers are the app's own (``DirectRoute.answer`` is the same code the WSGI route
runs once it has the body).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

DIRECT_ROUTES = "gpu_extender.direct_routes"
"""The key under which a Flask app's ``extensions`` carry its direct routes."""

MAX_DIRECT_HEAD_BYTES = 4094
"""A head longer than gunicorn's request-line limit goes through gunicorn (which checks its
own limits); Go's heads for the verbs are ~200 bytes."""


class DirectRoute(Protocol):
    """One route the worker may answer itself."""

    @property
    def inline(self) -> bool:
        """Answered on the worker's event-loop thread (short, CPU-only work that its callers
        serialise anyway: kube-scheduler's filter and prioritize) instead of a pool thread
        (a bind waits for the API server)."""

    @property
    def max_body_bytes(self) -> int: ...

    @property
    def body_read_timeout_s(self) -> float: ...

    def answer_body(self, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and the JSON answer to ``body``; never raises."""

    def answer_late(self, received: int, length: int) -> tuple[int, bytes]:
        """The answer when the body did not arrive within ``body_read_timeout_s``."""

    def after_answer(self) -> None:
        """Work the answer did not wait for, run once the answer is written (or handed to a
        pool thread to finish writing); not when the connection failed. Never raises."""


def offer_direct_routes(app: Any, routes: Mapping[str, DirectRoute]) -> None:
    """Let the worker answer ``routes`` (path -> route) of the Flask ``app`` itself."""
    app.extensions[DIRECT_ROUTES] = {path.encode("ascii"): route
                                     for path, route in routes.items()}


def direct_routes(app: Any) -> Mapping[bytes, DirectRoute]:
    """The direct routes ``app`` offers (none for a plain WSGI app)."""
    extensions = getattr(app, "extensions", None)
    found = extensions.get(DIRECT_ROUTES) if isinstance(extensions, dict) else None
    return found if isinstance(found, dict) else {}


@dataclass(frozen=True)
class DirectRequest:
    route: DirectRoute
    body_start: int
    """Where the body begins in the connection's bytes."""
    length: int
    close: bool
    """The client asked for ``Connection: close``."""

    @property
    def end(self) -> int:
        return self.body_start + self.length


_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_HEAD = re.compile(rb"POST (/[!-~]*) HTTP/1\.1\r\n((?:" + _TOKEN + rb":[\t -~\x80-\xff]*\r\n)*)"
                   rb"\r\n")
_FIELD = re.compile(rb"(" + _TOKEN + rb"):[\t ]*([^\r]*?)[\t ]*\r\n")
_REFUSED = frozenset((b"transfer-encoding", b"expect", b"upgrade"))


def parse_direct(data: bytes | bytearray, routes: Mapping[bytes, DirectRoute]
                 ) -> DirectRequest | None:
    """The direct request whose complete head starts ``data``, or ``None`` when the head is
    not the plain shape (module docstring): gunicorn then parses and answers it."""
    match = _HEAD.match(data, 0, MAX_DIRECT_HEAD_BYTES + 4)
    if match is None:
        return None
    route = routes.get(match.group(1))
    if route is None:
        return None
    length: int | None = None
    close = False
    for name, value in _FIELD.findall(match.group(2)):
        lowered = name.lower()
        if lowered == b"content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
        elif lowered in _REFUSED:
            return None
        elif lowered == b"connection":
            tokens = {token.strip() for token in value.lower().split(b",")}
            if b"upgrade" in tokens:
                return None
            close = b"close" in tokens
    if length is None or length > route.max_body_bytes:
        return None
    return DirectRequest(route, match.end(), length, close)


_REASONS = {200: b"OK", 400: b"Bad Request", 408: b"Request Timeout",
            413: b"Request Entity Too Large", 500: b"Internal Server Error"}


def response_bytes(status: int, body: bytes, *, close: bool) -> bytes:
    """The whole HTTP/1.1 response, for one ``sendall``."""
    return b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        status, _REASONS.get(status, b"Unknown"), len(body),
        b"Connection: close\r\n" if close else b"", body)
