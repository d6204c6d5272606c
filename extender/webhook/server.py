"""The webhook under gunicorn, serving TLS.

Unlike the extender, the webhook holds no state: any number of threads and replicas answer the
same. One worker process with threads (a review takes well under a millisecond of Python, so
threads only cover slow clients), ``/metrics`` then counts every review of the process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from extender.platform import Platform
from extender.server.logs import logging_config
from extender.server.tls import ReloadingTlsContext, TlsFiles
from extender.webhook.app import create_app


@dataclass(frozen=True)
class WebhookOptions:
    host: str
    port: int
    cert_file: str
    key_file: str
    threads: int = 4
    log_level: str = "info"
    access_log: bool = False
    dra_extended_resources: frozenset[str] = frozenset()
    """Extended resources a DeviceClass maps (``webhook/dra_mix.py``)."""
    dra_first_available: bool = False
    """Rewrite untyped GPU claims into cost-ordered alternatives (``first_available.py``)."""


def gunicorn_settings(options: WebhookOptions) -> dict[str, Any]:
    host = f"[{options.host}]" if ":" in options.host else options.host
    return {
        "bind": [f"{host}:{options.port}"],
        "workers": 1,
        "worker_class": "gthread",
        "threads": options.threads,
        # the API server keeps connections to webhooks alive (Go's 90 s idle timeout)
        "keepalive": 120,
        "timeout": 30,
        "graceful_timeout": 10,
        "certfile": options.cert_file,
        "keyfile": options.key_file,
        # a renewed certificate (cert-manager, the kubelet's Secret update) is served from the
        # next connection on, without a restart
        "ssl_context": ReloadingTlsContext(
            TlsFiles(Path(options.cert_file), Path(options.key_file))).context,
        "proc_name": "gpu-extender-webhook",
        # the worker heartbeat file: /tmp is read-only under readOnlyRootFilesystem
        "worker_tmp_dir": "/dev/shm" if Path("/dev/shm").is_dir() else None,
        "logconfig_dict": logging_config(options.log_level, access_log=options.access_log),
        "loglevel": options.log_level,
        "accesslog": "-" if options.access_log else None,
        "control_socket_disable": True,
    }


class WebhookApplication(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: dict[str, Any], platform: Platform,
                 options: WebhookOptions | None = None) -> None:
        self._settings = settings
        self._platform = platform
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._settings.items():
            if value is not None and key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        options = self._options
        if options is None:
            return create_app(self._platform)
        return create_app(self._platform, dra_mapped=options.dra_extended_resources,
                          first_available=options.dra_first_available)


def run(options: WebhookOptions, platform: Platform) -> None:
    """Serve until gunicorn is told to stop (SIGTERM/SIGINT)."""
    WebhookApplication(gunicorn_settings(options), platform, options).run()
