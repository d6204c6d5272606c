"""Serving TLS for the webhook: a certificate the API server trusts through the caBundle, and
rotation without a restart.

gunicorn's gthread worker builds the SSL context of every new connection through the
``ssl_context`` hook; ``ReloadingContext`` keeps one context and rebuilds it when the
certificate or key file changes on disk (cert-manager renews the Secret, the kubelet updates
the mounted files), so a renewed certificate is served from the next connection on.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extender.errors import ExtenderError


class TlsFileError(ExtenderError):
    """The certificate or key cannot be loaded (message names the file and why)."""


def check_pair(cert_file: str, key_file: str) -> None:
    """Load the pair once so a wrong path or a mismatched key fails at start, plainly."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    for flag, path in (("--tls-cert-file", cert_file), ("--tls-private-key-file", key_file)):
        if not Path(path).is_file():
            raise TlsFileError(f"{flag} {path}: no such file")
    try:
        context.load_cert_chain(certfile=cert_file, keyfile=key_file)
    except (ssl.SSLError, OSError) as exc:
        raise TlsFileError(f"--tls-cert-file {cert_file} / --tls-private-key-file {key_file}: "
                           f"cannot load the pair ({exc})") from exc


class ReloadingContext:
    """gunicorn ``ssl_context(conf, default_factory)`` hook that follows file changes."""

    def __init__(self, cert_file: str, key_file: str) -> None:
        self._files = (cert_file, key_file)
        self._lock = threading.Lock()
        self._stamp: tuple[int, ...] = ()
        self._context: ssl.SSLContext | None = None
        self.loads = 0

    def _current_stamp(self) -> tuple[int, ...]:
        stamp: list[int] = []
        for path in self._files:
            try:
                info = os.stat(path)
            except OSError:
                return self._stamp  # mid-rotation (the kubelet swaps a symlink): keep serving
            stamp += [info.st_mtime_ns, info.st_size, info.st_ino]
        return tuple(stamp)

    def __call__(self, conf: Any, default_factory: Callable[[], ssl.SSLContext]
                 ) -> ssl.SSLContext:
        stamp = self._current_stamp()
        with self._lock:
            if self._context is None or stamp != self._stamp:
                try:
                    self._context = default_factory()
                    self.loads += 1
                except (ssl.SSLError, OSError):
                    if self._context is None:
                        raise
                    # a half-written pair: keep the previous context, retry next connection
                    return self._context
                self._stamp = stamp
            return self._context
