"""Run the real gpu-extender webhook next to a LocalCluster and register it with the
apiserver from the shipped manifest (manifests/webhook.yaml), the serving certificate made by
the shipped helper (``gpu-extender webhook-certs``)."""

from __future__ import annotations

import base64
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import AdmissionregistrationV1Api, ApiException

from localcluster import LocalCluster
from localcluster.binaries import REPO_ROOT
from localcluster.network import tls_context, wait_until_ready
from localcluster.process import ManagedProcess

WEBHOOK_MANIFEST = REPO_ROOT / "manifests" / "webhook.yaml"
WEBHOOK_DATA = Path(__file__).parent / "data" / "webhook"


@dataclass
class Webhook:
    cluster: LocalCluster
    certs: Path
    port: int
    process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self, config: Path, extra_args: tuple[str, ...] = ()) -> None:
        self.stop()
        command = [sys.executable, "-m", "extender", "webhook", "--host", "127.0.0.1",
                   "--port", str(self.port), "--config", str(config),
                   "--tls-cert-file", str(self.certs / "tls.crt"),
                   "--tls-private-key-file", str(self.certs / "tls.key"), *extra_args]
        self.process = self.cluster.start_process("webhook", command, cwd=REPO_ROOT)
        wait_until_ready(self.process, f"{self.url}/healthz", 30,
                         tls_context(self.certs / "ca.crt"))

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


def make_certs(directory: Path) -> Path:
    """``gpu-extender webhook-certs`` exactly as a user runs it, plus the loopback address the
    local apiserver dials."""
    subprocess.run([sys.executable, "-m", "extender", "webhook-certs", "--ip", "127.0.0.1",
                    "--manifest", str(WEBHOOK_MANIFEST), "--out-dir", str(directory)],
                   check=True, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
    return directory


def register(cluster: LocalCluster, webhook: Webhook) -> None:
    """Create the webhook configurations of the filled-in manifest, pointing at our port.

    The Service reference becomes a URL (a local cluster has no Service network); everything
    else (rules, selectors, failure policy, timeouts, caBundle) is what we ship.
    """
    api = AdmissionregistrationV1Api(cluster.api_client())
    for document in yaml.safe_load_all((webhook.certs / "webhook.yaml").read_text()):
        if not document or not document["kind"].endswith("WebhookConfiguration"):
            continue
        for entry in document["webhooks"]:
            client_config = entry["clientConfig"]
            path = client_config.pop("service")["path"]
            client_config["url"] = f"{webhook.url}{path}"
            assert base64.b64decode(client_config["caBundle"]) == \
                (webhook.certs / "ca.crt").read_bytes()
        if document["kind"] == "MutatingWebhookConfiguration":
            api.create_mutating_webhook_configuration(document)
        else:
            api.create_validating_webhook_configuration(document)


def create_pod(cluster: LocalCluster, pod: dict[str, Any], *, dry_run: bool = False) -> Any:
    kwargs = {"dry_run": "All"} if dry_run else {}
    return cluster.api().create_namespaced_pod("default", pod, **kwargs)


def wait_enforced(cluster: LocalCluster, invalid_pod: dict[str, Any],
                  gpu_pod: dict[str, Any]) -> None:
    """The apiserver picks up new webhook configurations asynchronously (one informer per
    kind): wait until a dry-run create of an invalid pod is refused *and* one of a GPU pod
    comes back mutated."""
    def refused() -> bool:
        try:
            create_pod(cluster, invalid_pod, dry_run=True)
        except ApiException as exc:
            return exc.status == 403
        return False

    def mutated() -> bool:
        return bool(create_pod(cluster, gpu_pod, dry_run=True).spec.scheduler_name ==
                    "gpu-scheduler")

    cluster.wait_for(refused, timeout_s=30, description="the validating webhook to be active")
    cluster.wait_for(mutated, timeout_s=30, description="the mutating webhook to be active")
