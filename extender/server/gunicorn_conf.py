"""gunicorn settings for the extender: ``runtime.gunicorn.common_settings`` (one worker, the
head-deadline gthread worker, keep-alive past kube-scheduler's 90 s idle timeout), with the
extender's thread count and timeout.

- ``gthread`` threads: binds arrive concurrently, and filter/prioritize must not wait behind
  a slow bind's API calls;
- nothing is built before the fork: ``runner`` creates the service in the worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from extender.runtime.gunicorn import KEEPALIVE_SECONDS, bind_address, common_settings
from extender.runtime.tls import TlsFiles

__all__ = ["DEFAULT_THREADS", "KEEPALIVE_SECONDS", "ServerOptions", "gunicorn_settings"]

DEFAULT_THREADS = 8


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8888
    threads: int = DEFAULT_THREADS
    keepalive: int = KEEPALIVE_SECONDS
    log_level: str = "info"
    log_format: str = "json"
    access_log: bool = False
    tls: TlsFiles | None = None
    timeout: int = 60
    """Seconds a worker may go silent before the master restarts it (covers loading a large
    cluster file)."""

    @property
    def bind(self) -> str:
        return bind_address(self.host, self.port)


def gunicorn_settings(options: ServerOptions) -> dict[str, Any]:
    return common_settings(name="gpu-extender", host=options.host, port=options.port,
                           threads=options.threads, tls=options.tls,
                           keepalive=options.keepalive, timeout=options.timeout,
                           log_level=options.log_level, log_format=options.log_format,
                           access_log=options.access_log)
