"""Prepare a user-supplied KubeSchedulerConfiguration for the local cluster.

The file is deployed as the user wrote it; only the two values that depend on this particular
cluster are rewritten: where the scheduler finds its kubeconfig (with --config, the --kubeconfig
flag is ignored) and where the extender listens.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import yaml

from localcluster.errors import ClusterStartupError

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


def _load(source: Path) -> dict[str, Any]:
    try:
        config = yaml.safe_load(source.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ClusterStartupError(f"cannot read scheduler config {source}: {error}") from error
    if not isinstance(config, dict):
        raise ClusterStartupError(f"scheduler config {source} is not a YAML mapping")
    if config.get("apiVersion") != API_VERSION or config.get("kind") != KIND:
        raise ClusterStartupError(
            f"scheduler config {source} must have apiVersion {API_VERSION} and kind {KIND}"
        )
    return config


def _with_host_port(url: str, host_port: str) -> str:
    """Replace the network location of ``url``, keeping its scheme and path."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=host_port))


def write_scheduler_config(
    source: Path, destination: Path, kubeconfig: Path, extender_host_port: str | None
) -> Path:
    """Copy ``source`` to ``destination`` with clientConnection.kubeconfig and (when an extender
    was started) every extender's urlPrefix host:port rewritten. Returns ``destination``."""
    config = _load(source)
    client_connection = config.get("clientConnection") or {}
    client_connection["kubeconfig"] = str(kubeconfig.resolve())
    config["clientConnection"] = client_connection
    if extender_host_port is not None:
        for extender in config.get("extenders") or []:
            extender["urlPrefix"] = _with_host_port(extender["urlPrefix"], extender_host_port)
    destination.write_text(yaml.safe_dump(config, sort_keys=False))
    return destination
