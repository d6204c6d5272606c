"""One JSON document from a running gpu-extender process, for the commands that read one with
``--url``: ``inspect`` (``/debug/inventory``), ``explain`` (``/debug/explain/NS/POD``) and
``shadow --report`` (``/report``). Every failure is a ``FetchError`` whose message starts with
the flag and the address, and says what to do:

- the process does not serve the path at all (Flask's own 404, the side listener's "is not
  served here", or a 404 that is not JSON): ``missing``, the caller's explanation (debug
  endpoints off, not a shadow...);
- another HTTP error: its status and the answer's ``Error`` (or the start of its body), e.g.
  "--url http://127.0.0.1:8888: 404 pod ml/x not found";
- nobody answers: "cannot reach ..." and the caller's ``unreachable`` hint;
- the answer is not JSON.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import orjson

from extender.errors import ExtenderError

ROUTE_MISSING = ("404 Not Found: The requested URL was not found on the server",
                 "is not served here")
"""How the extender's Flask app and the side listener answer a path they have no route for."""

DEBUG_OFF = ("its debug endpoints are off (chart: extender.debugEndpoints: true; serve: drop "
             "--no-debug-endpoints), or this is not gpu-extender")
"""``missing`` for the extender's ``/debug/*`` routes."""


class FetchError(ExtenderError):
    """A document could not be fetched; the message names the flag, the address and why."""


def fetch_json(url: str, path: str, *, missing: str, query: Mapping[str, str] | None = None,
               who: str = "the extender", unreachable: str = "", flag: str = "--url",
               timeout_s: float = 30) -> Any:
    """``GET url + path`` (with ``query``), decoded."""
    target = url.rstrip("/") + path
    if query:
        target += "?" + urllib.parse.urlencode(query)
    where = f"{flag} {url}"
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
        error = _error_of(text)
        if exc.code == 404 and (error is None or error.startswith(ROUTE_MISSING)
                                or ROUTE_MISSING[1] in error):
            raise FetchError(f"{where}: {who} does not serve {path.split('?', maxsplit=1)[0]}: "
                             f"{missing}") from exc
        raise FetchError(f"{where}: {exc.code} {error or text[:200]}") from exc
    except (urllib.error.URLError, OSError) as exc:
        hint = f"; {unreachable}" if unreachable else ""
        raise FetchError(f"{where}: cannot reach {who} ({exc}){hint}") from exc
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise FetchError(f"{where}: {path} did not answer JSON ({exc})") from exc


def _error_of(body: str) -> str | None:
    """The ``Error`` of a JSON error answer (``None``: not one)."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(parsed, dict):
        error = parsed.get("Error", parsed.get("error"))
        return None if error is None else str(error)
    return None
