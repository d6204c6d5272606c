"""Serving TLS for every listener that speaks it (the extender, the webhook): HTTPS, optional
mutual TLS, certificates reloaded on change.

gunicorn's gthread worker asks its ``ssl_context`` hook for a context on every accepted
connection. ``ReloadingTlsContext.context`` answers from a cache keyed by the files' stat
(inode, size, mtime), so a rotated Secret (the kubelet swaps the ``..data`` symlink) is served
from the next connection on, without a restart. A rotation caught half-written (the new
certificate with the old key) fails to load: the previous context keeps serving, a warning is
logged, and the next connection tries again.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.runtime.command import flag_error

_log = logging.getLogger(__name__)

FileStamp = tuple[int, int, int]


@dataclass(frozen=True)
class TlsFiles:
    """The serving certificate, its key, and the CA that client certificates must chain to
    (``None``: no client certificate is asked for)."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None

    @property
    def mutual(self) -> bool:
        return self.client_ca_file is not None

    def paths(self) -> tuple[Path, ...]:
        extra = (self.client_ca_file,) if self.client_ca_file is not None else ()
        return (self.cert_file, self.key_file, *extra)

    def stamp(self) -> tuple[FileStamp, ...]:
        """What changes when any file is replaced; raises OSError for a missing file."""
        stamps = []
        for path in self.paths():
            status = os.stat(path)  # follows the Secret volume's ..data symlink
            stamps.append((status.st_ino, status.st_size, status.st_mtime_ns))
        return tuple(stamps)

    def load(self) -> ssl.SSLContext:
        """A server context from the files as they are now; raises OSError or ssl.SSLError."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(certfile=self.cert_file, keyfile=self.key_file)
        if self.client_ca_file is not None:
            context.load_verify_locations(cafile=self.client_ca_file)
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def check(self, command: str = "gpu-extender serve") -> None:
        """Validate once at the edge: raise ConfigError naming the flag and the file."""
        for flag, path in (("--tls-cert-file", self.cert_file),
                           ("--tls-private-key-file", self.key_file),
                           ("--client-ca-file", self.client_ca_file)):
            if path is not None and not path.is_file():
                raise flag_error(flag, f"{str(path)!r} is not a readable file", command)
        try:
            self.load()
        except (OSError, ssl.SSLError) as exc:
            names = ", ".join(str(path) for path in self.paths())
            raise flag_error("--tls-cert-file", f"the TLS files ({names}) do not load: {exc}; "
                             "expected a PEM certificate chain, its matching PEM private key "
                             "and, for --client-ca-file, PEM CA certificates", command) from exc


class ReloadingTlsContext:
    """gunicorn ``ssl_context`` hook that reloads the files when they change."""

    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self.reloads = 0
        self._lock = threading.Lock()
        self._stamp: tuple[FileStamp, ...] | None = None
        self._context: ssl.SSLContext | None = None

    def current(self) -> ssl.SSLContext:
        with self._lock:
            try:
                stamp = self.files.stamp()
            except OSError as exc:
                return self._keep(exc)
            if stamp == self._stamp and self._context is not None:
                return self._context
            try:
                context = self.files.load()
            except (OSError, ssl.SSLError) as exc:
                return self._keep(exc)
            if self._context is not None:
                self.reloads += 1
                _log.info("TLS certificates reloaded", extra={"fields": {
                    "cert_file": str(self.files.cert_file), "reloads": self.reloads}})
            self._stamp = stamp
            self._context = context
            return context

    def context(self, config: Any, default_ssl_context_factory: Any) -> ssl.SSLContext:
        """The hook's signature: gunicorn's own factory is not used (it has no reload)."""
        return self.current()

    def _keep(self, error: Exception) -> ssl.SSLContext:
        if self._context is None:
            raise error
        _log.warning("TLS files changed but do not load yet; serving the previous "
                     "certificate", extra={"fields": {"error": str(error)}})
        return self._context
