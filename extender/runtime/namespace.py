"""The namespace a process runs in: ``$POD_NAMESPACE`` (the downward API), else the in-cluster
service account's, else ``default``. Where a Lease or the demand objects go by default."""

from __future__ import annotations

import os
from pathlib import Path

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def own_namespace() -> str:
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"
