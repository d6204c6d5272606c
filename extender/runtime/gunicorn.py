"""The one gunicorn application class and the settings every gunicorn process here shares
(the extender's ``serve`` and the webhook).

- one worker process: the extender's inventory lives in its memory (a second worker would
  hold a second, diverging allocation state); the webhook is stateless but one process keeps
  its ``/metrics`` whole;
- ``HeadDeadlineWorker`` (``runtime.worker``): gthread with the TLS handshake and request head
  read by the event loop under ``head_timeout_s``, so stalled clients hold no thread;
- keep-alive longer than the Go clients' idle timeout (90 s: kube-scheduler, the API server
  calling a webhook), so the client closes idle connections first;
- logs through ``runtime.logs``; no control socket (gunicorn >= 25.1 opens one in $HOME,
  a second process on the machine would fight over it);
- ``load`` runs in the worker, after the fork: threads and API connections are created there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from extender.runtime.command import DEFAULT_HEAD_TIMEOUT_S
from extender.runtime.logs import logging_config
from extender.runtime.tls import ReloadingTlsContext, TlsFiles

KEEPALIVE_SECONDS = 120
MAX_CONNECTIONS = 4096
WORKER_CLASS = "extender.runtime.worker.HeadDeadlineWorker"


def bind_address(host: str, port: int) -> str:
    bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{bracketed}:{port}"


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


def common_settings(*, name: str, host: str, port: int, threads: int,
                    tls: TlsFiles | None = None, keepalive: int = KEEPALIVE_SECONDS,
                    timeout: int = 60, log_level: str = "info", log_format: str = "json",
                    access_log: bool = False) -> dict[str, Any]:
    return {
        **tls_settings(tls),
        "bind": [bind_address(host, port)],
        "workers": 1,
        "worker_class": WORKER_CLASS,
        "threads": threads,
        # connections whose head is being read, kept alive or in a thread, together: stalled
        # sockets cost a descriptor each, never a thread; past this the worker stops
        # accepting until deadlines free some (gunicorn's default is 1000)
        "worker_connections": MAX_CONNECTIONS,
        "keepalive": keepalive,
        "timeout": timeout,
        "graceful_timeout": 10,
        "preload_app": False,
        "proc_name": name,
        # the worker heartbeat file: /tmp is read-only under readOnlyRootFilesystem
        "worker_tmp_dir": "/dev/shm" if Path("/dev/shm").is_dir() else None,
        "logconfig_dict": logging_config(log_level, access_log=access_log, fmt=log_format),
        "loglevel": log_level,
        "accesslog": "-" if access_log else None,
        # no access-log atoms built per request when the access log is off (gunicorn_logger)
        "logger_class": "extender.runtime.gunicorn_logger.AccessLogOffLogger",
        "control_socket_disable": True,
    }


class GunicornApp(BaseApplication):  # type: ignore[misc]
    """``load()`` builds the WSGI app in the worker; ``stop()`` (the ``worker_exit`` hook)
    stops whatever ``load`` started. ``head_timeout_s`` is read by ``HeadDeadlineWorker``."""

    def __init__(self, settings: dict[str, Any], load: Callable[[], Any], *,
                 stop: Callable[[], None] | None = None,
                 head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S) -> None:
        self._settings = {**settings, "worker_exit": _worker_exit}
        self._load = load
        self._stop = stop
        self.head_timeout_s = head_timeout_s
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._settings.items():
            # settings newer than the installed gunicorn are skipped, not fatal
            if value is not None and key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        return self._load()

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()


def _worker_exit(server: Any, worker: Any) -> None:
    """gunicorn hook: stop what the exiting worker started (watches, listeners)."""
    stop = getattr(worker.app, "stop", None)
    if callable(stop):
        stop()
