"""``serve`` with TLS flags and the monitoring listener, under real gunicorn (offline mode):
HTTPS verbs, plain-HTTP probes and metrics on the second address, certificates reloaded on
change, and every bad flag combination refused with the flag named."""

from __future__ import annotations

import http.client
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.pki import generate_pki, issue_from_ca
from tests.server.conftest import DATA
from tests.server.test_serve_offline import REPO, free_port, request

SERVER_NAME = "gpu-extender.test"


def _serve(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "extender", "serve", "--cluster-file",
                                 str(DATA / "cluster.json"), *args],
                                cwd=REPO, stdout=out, stderr=out,
                                env={**os.environ, "PYTHONPATH": str(REPO)})


def _wait_ok(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if request(http.client.HTTPConnection("127.0.0.1", port, timeout=2),
                       "GET", "/readyz")[0] == 200:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "not ready: " + log.read_text()
        time.sleep(0.1)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, int, Path, Path]]:
    pki = generate_pki(tmp_path / "pki")
    serving = issue_from_ca(tmp_path / "tls", "server", SERVER_NAME, server=True,
                            dns_names=(SERVER_NAME,), ca_dir=tmp_path / "pki")
    port, monitoring = free_port(), free_port()
    log = tmp_path / "server.log"
    process = _serve(["--port", str(port), "--tls-cert-file", str(serving.cert),
                      "--tls-private-key-file", str(serving.key),
                      "--monitoring-address", f"127.0.0.1:{monitoring}"], log)
    try:
        _wait_ok(monitoring, process, log)
        yield port, monitoring, pki.ca_cert, tmp_path
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def _https(port: int, ca: Path) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    return http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)


def _peer_serial(port: int, ca: Path) -> int:
    conn = _https(port, ca)
    conn.connect()
    assert conn.sock is not None
    der = conn.sock.getpeercert(binary_form=True)  # type: ignore[attr-defined]
    conn.close()
    from cryptography import x509
    return x509.load_der_x509_certificate(der).serial_number


def test_verbs_over_https_probes_and_metrics_over_plain_http(
        tls_server: tuple[int, int, Path, Path]) -> None:
    port, monitoring, ca, _ = tls_server
    status, body = request(_https(port, ca), "GET", "/readyz")
    assert (status, body) == (200, {"status": "ready"})
    # plain HTTP to the TLS port gets no answer
    with pytest.raises((OSError, http.client.HTTPException)):
        request(http.client.HTTPConnection("127.0.0.1", port, timeout=5), "GET", "/readyz")
    plain = http.client.HTTPConnection("127.0.0.1", monitoring, timeout=5)
    assert request(plain, "GET", "/healthz") == (200, {"status": "ok"})
    status, text = request(plain, "GET", "/metrics")
    assert status == 200 and "gpu_extender_inventory_synced 1.0" in text
    # the monitoring listener serves nothing that schedules
    status, body = request(plain, "POST", "/filter", b"{}")
    assert status == 405
    status, body = request(plain, "GET", "/debug/inventory")
    assert status == 404 and "/healthz" in body["Error"]


def test_rotated_certificate_is_served_without_restart(
        tls_server: tuple[int, int, Path, Path]) -> None:
    port, _, ca, tmp_path = tls_server
    before = _peer_serial(port, ca)
    issue_from_ca(tmp_path / "tls", "server", SERVER_NAME, server=True,
                  dns_names=(SERVER_NAME,), ca_dir=tmp_path / "pki")
    deadline = time.monotonic() + 10
    while (after := _peer_serial(port, ca)) == before:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert after != before
    assert (tmp_path / "server.log").read_text().count("TLS certificates reloaded") == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--tls-cert-file", "x.crt"], "--tls-private-key-file: is required together with "
                                   "--tls-cert-file"),
    (["--client-ca-file", "ca.crt"], "--client-ca-file: needs --tls-cert-file"),
    (["--tls-cert-file", "/nonexistent.crt", "--tls-private-key-file", "/nonexistent.key"],
     "--tls-cert-file: '/nonexistent.crt' is not a readable file"),
    (["--monitoring-address", "9090"], "--monitoring-address: '9090' is not HOST:PORT"),
    (["--monitoring-address", "0.0.0.0:99999"], "with a port in 1-65535"),
], ids=["key missing", "ca without tls", "missing file", "no port", "port out of range"])
def test_bad_flags_exit_2_naming_the_flag(tmp_path: Path, args: list[str],
                                          message: str) -> None:
    log = tmp_path / "out.log"
    process = _serve(args, log)
    assert process.wait(timeout=30) == 2
    text = log.read_text()
    assert message in text and "Traceback" not in text


def test_taken_monitoring_port_exits_2_naming_the_flag(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        log = tmp_path / "out.log"
        process = _serve(["--port", str(free_port()),
                          "--monitoring-address", f"127.0.0.1:{port}"], log)
        assert process.wait(timeout=30) == 2
    text = log.read_text()
    assert f"--monitoring-address: cannot listen on 127.0.0.1:{port}" in text
    assert "Traceback" not in text


def test_key_not_matching_the_certificate_is_refused(tmp_path: Path) -> None:
    generate_pki(tmp_path / "pki")
    one = issue_from_ca(tmp_path / "a", "server", SERVER_NAME, server=True,
                        ca_dir=tmp_path / "pki")
    other = issue_from_ca(tmp_path / "b", "server", SERVER_NAME, server=True,
                          ca_dir=tmp_path / "pki")
    log = tmp_path / "out.log"
    process = _serve(["--tls-cert-file", str(one.cert), "--tls-private-key-file",
                      str(other.key)], log)
    assert process.wait(timeout=30) == 2
    assert "do not load" in log.read_text()
