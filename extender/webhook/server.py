"""The webhook under gunicorn, serving TLS.

Unlike the extender, the webhook holds no state of its own (its node watch, with
``--watch-nodes``, is a cache of the API's): any number of threads and replicas answer the
same. One worker process with threads (a review takes well under a millisecond of Python, so
threads only cover slow clients), ``/metrics`` then counts every review of the process. The
settings, the head-deadline worker (stalled TLS handshakes and request heads hold no thread:
``failurePolicy: Ignore`` must not become "admit everything unmutated") and the certificate
reload are the runtime's (``extender.runtime.gunicorn``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.platform import Platform
from extender.runtime.command import DEFAULT_HEAD_TIMEOUT_S
from extender.runtime.gunicorn import GunicornApp, common_settings
from extender.runtime.tls import TlsFiles
from extender.webhook.app import create_app
from extender.webhook.cluster import WebhookCluster
from extender.webhook.trust import DEFAULT_TRUSTED_USERS


@dataclass(frozen=True)
class WebhookOptions:
    host: str
    port: int
    cert_file: str
    key_file: str
    threads: int = 4
    log_level: str = "info"
    log_format: str = "json"
    access_log: bool = False
    head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S
    trusted_users: tuple[str, ...] = DEFAULT_TRUSTED_USERS
    dra_extended_resources: frozenset[str] = frozenset()
    """Extended resources a DeviceClass maps (``webhook/dra_mix.py``)."""
    dra_first_available: bool = False
    """Rewrite untyped GPU claims into cost-ordered alternatives (``first_available.py``)."""
    kube_configuration: Any = None
    """The API server's client configuration (``--watch-nodes``, ``--agent-user``), for the
    worker's ``cluster.py``; ``None``: no API access."""
    watch_nodes: bool = False
    agent_users: frozenset[str] = frozenset()
    """The node agent's identities, whose Evictions must name a pod on their own node."""


def gunicorn_settings(options: WebhookOptions) -> dict[str, Any]:
    return common_settings(
        name="gpu-extender-webhook", host=options.host, port=options.port,
        threads=options.threads, timeout=30,
        tls=TlsFiles(Path(options.cert_file), Path(options.key_file)),
        log_level=options.log_level, log_format=options.log_format,
        access_log=options.access_log)


class _Worker:
    """What one gunicorn worker builds (``load``, after the fork) and stops at its exit."""

    def __init__(self, options: WebhookOptions, platform: Platform) -> None:
        self._options = options
        self._platform = platform
        self._cluster: WebhookCluster | None = None

    def load(self) -> Any:
        options = self._options
        if options.kube_configuration is not None:
            self._cluster = WebhookCluster(self._platform, options.kube_configuration,
                                           watch_nodes=options.watch_nodes,
                                           agent_users=options.agent_users)
            self._cluster.start()
        cluster = self._cluster
        return create_app(self._platform, options.trusted_users,
                          dra_mapped=options.dra_extended_resources,
                          first_available=options.dra_first_available,
                          certificates=(Path(options.cert_file),),
                          pools=cluster.pools if cluster is not None else None,
                          evictions=cluster.evictions if cluster is not None else None)

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.stop()


def run(options: WebhookOptions, platform: Platform) -> None:
    """Serve until gunicorn is told to stop (SIGTERM/SIGINT)."""
    worker = _Worker(options, platform)
    GunicornApp(gunicorn_settings(options), worker.load, stop=worker.stop,
                head_timeout_s=options.head_timeout_s).run()
