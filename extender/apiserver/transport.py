"""The hot writes as raw requests: one keep-alive POST (or PATCH) of orjson bytes on a pooled
connection, no model layer, no per-request client setup.

The generated client's ``create_namespaced_pod_binding`` spends milliseconds of Python per call
(parameter checks, ``sanitize_for_serialization``, header selection, ``json.dumps``, its own
response wrapper) before urllib3 sees the request; a bind runs beside the next pods' filter and
prioritize in the same process, so that Python is taken from them (issue 22). Here the request
is built once per call from bytes: the path, the body (``orjson.dumps``), the headers computed
at construction plus the credentials' header (a service-account token may rotate, so it is
read per request through the configuration, as the generated client does).

The connections are opened by the same ``urllib3.PoolManager`` the generated client built (its
TLS settings, CA and client certificate) and kept in a pool of their own sized for concurrent
binds (the watches hold their connections for minutes, and a write that finds the pool empty
would pay a TLS handshake); the requests on them are written and read by ``kept_alive``
(urllib3's per-request layers cost ~0.5 ms of Python each).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from extender.apiserver.errors import KubeError, Unavailable, error_for_status, status_message
from extender.apiserver.kept_alive import KeptAlive

WRITE_POOL_SIZE = 16
"""Connections kept for writes: more than the extender's request threads (8 by default), so
concurrent binds never open a fresh TLS connection."""

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class RawAnswer:
    status: int
    data: bytes


class RawTransport:
    """POST / PATCH raw bytes to the API server; raises our ``KubeError`` subclasses."""

    def __init__(self, api_client: Any, *, timeout: float = 30.0,
                 pool_size: int = WRITE_POOL_SIZE) -> None:
        import urllib3

        configuration = api_client.configuration
        self._configuration = configuration
        self._base = configuration.host.rstrip("/")
        self._pool = api_client.rest_client.pool_manager.connection_from_url(
            self._base, pool_kwargs={"maxsize": pool_size,
                                     "timeout": urllib3.Timeout(connect=min(10.0, timeout),
                                                                read=timeout)})
        url = urllib3.util.parse_url(self._base)
        self._prefix = url.path or ""
        self._connections = KeptAlive(self._new_socket, url.netloc or "", timeout=timeout,
                                      keep=pool_size)
        self._headers = {"Content-Type": JSON, "Accept": JSON,
                         "User-Agent": "gpu-extender"}
        self._errors: tuple[type[BaseException], ...] = (urllib3.exceptions.HTTPError,
                                                         OSError)

    def _new_socket(self) -> Any:
        """A connected socket (TLS done) with the generated client's settings."""
        connection = self._pool._new_conn()
        connection.connect()
        return connection.sock

    @property
    def connections_opened(self) -> int:
        return self._connections.opened

    def post(self, path: str, body: bytes, action: str) -> RawAnswer:
        return self.request("POST", path, body, action)

    def patch(self, path: str, body: bytes, action: str) -> RawAnswer:
        return self.request("PATCH", path, body, action, content_type=MERGE_PATCH)

    def request(self, method: str, path: str, body: bytes, action: str, *,
                content_type: str = JSON) -> RawAnswer:
        """One request; a 2xx answer is returned, anything else raised as ``KubeError``."""
        headers = self._credentials()
        if content_type != JSON:
            headers["Content-Type"] = content_type
        try:
            status, data = self._connections.request(method, self._prefix + path, body,
                                                     headers)
        except self._errors as exc:
            raise Unavailable(f"{action}: {type(exc).__name__}: {exc}") from exc
        if 200 <= status < 300:
            return RawAnswer(status, data)
        raise _http_error(action, status, data)

    def _credentials(self) -> dict[str, str]:
        """The fixed headers plus whatever the configuration authenticates with in a header
        (a bearer token; client certificates live in the pool's TLS context)."""
        headers = dict(self._headers)
        for setting in self._configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        return headers


def _http_error(action: str, status: int, data: bytes) -> KubeError:
    message, reason = status_message(data)
    text = f"{action}: HTTP {status}" + (f" {reason}" if reason else "") + \
        (f": {message}" if message else "")
    return error_for_status(status, text, reason)


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def events_path(namespace: str, name: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/events"
    return f"{path}/{quote(name, safe='')}" if name else path
