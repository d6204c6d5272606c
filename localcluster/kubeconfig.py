"""kubeconfig files for the local cluster's client identities."""

from __future__ import annotations

from pathlib import Path

import yaml

from localcluster.pki import CertKeyPair


def write_kubeconfig(
    path: Path, server: str, ca_cert: Path, client: CertKeyPair, user_name: str
) -> Path:
    """Write a single-context kubeconfig with absolute file references and return its path.

    Absolute paths matter: kube-scheduler resolves a relative path against its own working
    directory, not against the kubeconfig's location.
    """
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": server, "certificate-authority": str(ca_cert.resolve())},
            }
        ],
        "users": [
            {
                "name": user_name,
                "user": {
                    "client-certificate": str(client.cert.resolve()),
                    "client-key": str(client.key.resolve()),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user_name}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
