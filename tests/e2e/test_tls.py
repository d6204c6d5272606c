"""The real kube-scheduler calls the extender over HTTPS (enableHTTPS + tlsConfig, the variant
the chart renders for extender-service mode), with and without mutual TLS, and a certificate
rotated on disk is served from the next connection on, without restarting the extender."""

from __future__ import annotations

import http.client
import socket
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from localcluster import ExtenderSpec, LocalCluster
from localcluster.binaries import REPO_ROOT
from localcluster.pki import CertKeyPair, generate_pki, issue_from_ca
from tests.e2e.gpu_helpers import GPU_PROFILE_CONFIG, create_pods, gpu_pod, wait_bound

pytestmark = pytest.mark.e2e

SERVER_NAME = "gpu-extender.kube-system.svc"


def _https_scheduler_config(directory: Path, ca: Path, client: CertKeyPair | None) -> Path:
    """gpu-scheduler-profile.yaml with its extender switched to the HTTPS variant."""
    config: dict[str, Any] = yaml.safe_load(GPU_PROFILE_CONFIG.read_text())
    extender = config["extenders"][0]
    extender["urlPrefix"] = "https://127.0.0.1:8443"  # the harness rewrites host:port only
    extender["enableHTTPS"] = True
    tls: dict[str, str] = {"caFile": str(ca), "serverName": SERVER_NAME}
    if client is not None:
        tls |= {"certFile": str(client.cert), "keyFile": str(client.key)}
    extender["tlsConfig"] = tls
    path = directory / "https-scheduler.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _client_context(ca: Path, client: CertKeyPair | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False  # the readiness poll dials 127.0.0.1
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    return context


def _served_serial(port: int, ca: Path, client: CertKeyPair | None) -> int:
    context = _client_context(ca, client)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def _serial(pair: CertKeyPair) -> int:
    return x509.load_pem_x509_certificate(pair.cert.read_bytes()).serial_number


@pytest.mark.parametrize("mutual", [False, True], ids=["https", "mutual-tls"])
def test_scheduler_calls_extender_over_tls_and_rotation_needs_no_restart(
        controlplane_binaries: object, tmp_path: Path, mutual: bool) -> None:
    pki = generate_pki(tmp_path / "pki")
    serving = issue_from_ca(tmp_path / "tls", "extender", SERVER_NAME, server=True,
                            dns_names=(SERVER_NAME,), ips=("127.0.0.1",),
                            ca_dir=tmp_path / "pki")
    client = (issue_from_ca(tmp_path / "tls", "scheduler-client", "kube-scheduler",
                            server=False, ca_dir=tmp_path / "pki") if mutual else None)
    scheduler_config = _https_scheduler_config(tmp_path, pki.ca_cert, client)

    def command(port: int) -> list[str]:
        args = [sys.executable, "-m", "extender", "serve", "--host", "127.0.0.1",
                "--port", str(port), "--tls-cert-file", str(serving.cert),
                "--tls-private-key-file", str(serving.key)]
        return args + (["--client-ca-file", str(pki.ca_cert)] if mutual else [])

    spec = ExtenderSpec(command, cwd=REPO_ROOT,
                        ready_context=_client_context(pki.ca_cert, client))
    with LocalCluster(scheduler_config, spec) as cluster:
        port = int(cluster.extender_url.rsplit(":", 1)[1])
        pid = cluster.extender_pid
        cluster.create_node("gpu-0", {"nvidia.com/gpu": 4},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"})
        create_pods(cluster, [gpu_pod("before-rotation", {"nvidia.com/gpu": 1})])
        assert wait_bound(cluster, "before-rotation") == "gpu-0"
        first_serial = _serial(serving)
        assert _served_serial(port, pki.ca_cert, client) == first_serial

        if mutual:
            # Without a client certificate no request gets an answer (TLS 1.3 reports the
            # refusal on the first read, so a request is needed, not just a handshake).
            with pytest.raises((OSError, http.client.HTTPException)):
                urllib.request.urlopen(f"{cluster.extender_url}/readyz", timeout=5,
                                       context=_client_context(pki.ca_cert, None))

        rotated = issue_from_ca(tmp_path / "tls", "extender", SERVER_NAME, server=True,
                                dns_names=(SERVER_NAME,), ips=("127.0.0.1",),
                                ca_dir=tmp_path / "pki")
        assert _serial(rotated) != first_serial
        deadline = time.monotonic() + 10
        while _served_serial(port, pki.ca_cert, client) != _serial(rotated):
            assert time.monotonic() < deadline, "the rotated certificate was never served"
            time.sleep(0.2)
        # kube-scheduler keeps its old connections; a new pod still schedules through TLS.
        create_pods(cluster, [gpu_pod("after-rotation", {"nvidia.com/gpu": 1})])
        assert wait_bound(cluster, "after-rotation") == "gpu-0"
        assert cluster.extender_pid == pid
        log = (cluster.workdir / "extender.log").read_text()
        assert "TLS certificates reloaded" in log
