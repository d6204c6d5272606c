"""gunicorn settings for the extender.

- one worker process: the inventory and its reservations live in that process's memory; a
  second worker would hold a second, diverging allocation state (double-booked GPUs);
- ``gthread`` worker with threads: binds arrive concurrently, and filter/prioritize must not
  wait behind a slow bind's API calls;
- keep-alive longer than kube-scheduler's idle connection timeout (Go's transport default is
  90 s), so the client closes idle connections first and never sends on one we just closed;
- nothing is built before the fork: ``runner`` creates the service in the worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from extender.server.logs import logging_config
from extender.server.tls import ReloadingTlsContext, TlsFiles

KEEPALIVE_SECONDS = 120
DEFAULT_THREADS = 8


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8888
    threads: int = DEFAULT_THREADS
    keepalive: int = KEEPALIVE_SECONDS
    log_level: str = "info"
    access_log: bool = False
    tls: TlsFiles | None = None
    timeout: int = 60
    """Seconds a worker may go silent before the master restarts it (covers loading a large
    cluster file)."""

    @property
    def bind(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") \
            else self.host
        return f"{host}:{self.port}"


def worker_exit(server: Any, worker: Any) -> None:
    """gunicorn hook: stop the watches of the worker that exits."""
    stop = getattr(worker.app, "stop_service", None)
    if callable(stop):
        stop()


def tls_settings(tls: TlsFiles | None) -> dict[str, Any]:
    """gunicorn's TLS settings: certfile/keyfile switch HTTPS on, the hook supplies a context
    that follows file changes (gunicorn's own would be built from the files as of start)."""
    if tls is None:
        return {}
    return {
        "certfile": str(tls.cert_file),
        "keyfile": str(tls.key_file),
        "ssl_context": ReloadingTlsContext(tls).context,
    }


def gunicorn_settings(options: ServerOptions) -> dict[str, Any]:
    return {
        **tls_settings(options.tls),
        "bind": [options.bind],
        "workers": 1,
        "worker_class": "gthread",
        "threads": options.threads,
        "keepalive": options.keepalive,
        "timeout": options.timeout,
        "graceful_timeout": 10,
        "preload_app": False,
        "proc_name": "gpu-extender",
        "logconfig_dict": logging_config(options.log_level, access_log=options.access_log),
        "loglevel": options.log_level,
        "accesslog": "-" if options.access_log else None,
        "logger_class": "extender.server.gunicorn_logger.AccessLogOffLogger",
        "worker_exit": worker_exit,
        # gunicorn >= 25.1 opens a control socket in $HOME by default: a second extender
        # on the machine would fight over it, and nothing here uses it
        "control_socket_disable": True,
    }
