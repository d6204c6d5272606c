"""Slowloris (issue 19, finding 6): sockets that stop mid request line, mid headers or mid TLS
ClientHello hold no thread, under real gunicorn, on ``serve`` (plain, and mutual TLS), the
webhook and the monitoring listener.

Each test opens 50 stalled sockets against a server with 2 request threads, then makes a legit
call while they are all still open (the head timeout is 30 s, longer than the whole test, so
nothing is reaped meanwhile): the call must answer within a generous client timeout. Before
the fix 8 such sockets froze ``serve`` for good. A last test shows stalled sockets are closed
once their head timeout passes.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from extender.runtime.listener import SideListener, always_ok, health_route
from localcluster.pki import CertKeyPair, generate_pki, issue_from_ca

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "tests" / "data" / "cluster.json"
SERVER_NAME = "gpu-extender.test"
STALLED = 50
LEGIT_TIMEOUT_S = 10.0  # generous: the bound is on behaviour (it answers), not on speed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "extender", *args], cwd=REPO,
                                stdout=out, stderr=out,
                                env={**os.environ, "PYTHONPATH": str(REPO)})


def wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, log.read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.5)  # the worker is up once it accepts; give it its first second
            return
        except OSError:
            assert time.monotonic() < deadline, "not listening: " + log.read_text()
            time.sleep(0.2)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def client_hello_start() -> bytes:
    """The first 20 bytes of a real TLS ClientHello (record header and a little more)."""
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=SERVER_NAME)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    assert hello[0] == 0x16 and len(hello) > 100  # a handshake record
    return hello[:20]


def stalled_sockets(port: int, prefixes: list[bytes]) -> list[socket.socket]:
    """``STALLED`` connections, cycling through ``prefixes``: each sends its prefix and stops."""
    sockets = []
    for i in range(STALLED):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(prefixes[i % len(prefixes)])
        sockets.append(sock)
    return sockets


def still_open(sock: socket.socket) -> bool:
    """The server has neither closed nor answered this socket."""
    sock.setblocking(False)
    try:
        sock.recv(1)  # a byte (an answer) or b"" (closed): not stalled any more
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)
    return False


PLAIN_STALLS = [b"POST /fil", b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Ty"]


@pytest.fixture
def pki(tmp_path: Path) -> tuple[Path, CertKeyPair, CertKeyPair]:
    authority = generate_pki(tmp_path / "pki")
    serving = issue_from_ca(tmp_path / "tls", "server", SERVER_NAME, server=True,
                            dns_names=(SERVER_NAME,), ca_dir=tmp_path / "pki")
    client = issue_from_ca(tmp_path / "tls", "client", "kube-scheduler", server=False,
                           ca_dir=tmp_path / "pki")
    return authority.ca_cert, serving, client


@pytest.fixture
def plain_serve(tmp_path: Path) -> Iterator[tuple[int, int]]:
    port, monitoring = free_port(), free_port()
    log = tmp_path / "serve.log"
    process = start(["serve", "--cluster-file", str(CLUSTER), "--port", str(port),
                     "--threads", "2", "--head-timeout", "30",
                     "--monitoring-address", f"127.0.0.1:{monitoring}"], log)
    try:
        wait_listening(port, process, log)
        yield port, monitoring
    finally:
        stop(process)


def test_stalled_heads_do_not_delay_a_verb_on_serve(plain_serve: tuple[int, int]) -> None:
    port, monitoring = plain_serve
    stalls = stalled_sockets(port, PLAIN_STALLS)
    stalls += stalled_sockets(monitoring, PLAIN_STALLS)
    kept_alive = http.client.HTTPConnection("127.0.0.1", port, timeout=LEGIT_TIMEOUT_S)
    kept_alive.request("GET", "/healthz")
    assert kept_alive.getresponse().read()
    assert kept_alive.sock is not None
    kept_alive.sock.sendall(b"GET /heal")  # slowloris on a kept-alive connection too
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=LEGIT_TIMEOUT_S)
        conn.request("POST", "/filter", body=(REPO / "tests" / "data" /
                                              "filter_untyped_nodenames.json").read_bytes(),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200, response.read()
        assert b"NodeNames" in response.read()
        health = http.client.HTTPConnection("127.0.0.1", monitoring, timeout=LEGIT_TIMEOUT_S)
        health.request("GET", "/readyz")
        assert health.getresponse().status == 200
        assert all(still_open(sock) for sock in stalls), "the stalls were reaped, not served"
    finally:
        kept_alive.close()
        for sock in stalls:
            sock.close()


def test_stalled_client_hellos_do_not_delay_a_mutual_tls_verb(
        tmp_path: Path, pki: tuple[Path, CertKeyPair, CertKeyPair]) -> None:
    ca, serving, client = pki
    port = free_port()
    log = tmp_path / "serve.log"
    process = start(["serve", "--cluster-file", str(CLUSTER), "--port", str(port),
                     "--threads", "2", "--head-timeout", "30",
                     "--tls-cert-file", str(serving.cert),
                     "--tls-private-key-file", str(serving.key),
                     "--client-ca-file", str(ca)], log)
    try:
        wait_listening(port, process, log)
        stalls = stalled_sockets(port, [client_hello_start()])
        context = ssl.create_default_context(cafile=str(ca))
        context.check_hostname = False
        context.load_cert_chain(str(client.cert), str(client.key))
        # a handshake completed and then a stalled request line holds no thread either
        done = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))
        done.sendall(b"POST /filt")
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=LEGIT_TIMEOUT_S,
                                           context=context)
        conn.request("GET", "/healthz")
        assert conn.getresponse().read() and conn.sock is not None
        for _ in range(2):  # a verb over TLS on the kept-alive connection: the direct path
            conn.request("POST", "/filter", body=(REPO / "tests" / "data" /
                                                  "filter_untyped_nodenames.json").read_bytes(),
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            assert response.status == 200 and b"NodeNames" in response.read()
        assert all(still_open(sock) for sock in stalls)
        done.close()
        for sock in stalls:
            sock.close()
    finally:
        stop(process)


def test_stalled_client_hellos_do_not_freeze_the_webhook(
        tmp_path: Path, pki: tuple[Path, CertKeyPair, CertKeyPair]) -> None:
    ca, serving, _client = pki
    port = free_port()
    log = tmp_path / "webhook.log"
    process = start(["webhook", "--port", str(port), "--host", "127.0.0.1", "--threads", "2",
                     "--head-timeout", "30", "--tls-cert-file", str(serving.cert),
                     "--tls-private-key-file", str(serving.key)], log)
    try:
        wait_listening(port, process, log)
        stalls = stalled_sockets(port, [client_hello_start()])
        context = ssl.create_default_context(cafile=str(ca))
        context.check_hostname = False
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=LEGIT_TIMEOUT_S,
                                           context=context)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
        assert all(still_open(sock) for sock in stalls)
        for sock in stalls:
            sock.close()
    finally:
        stop(process)


def test_a_stalled_head_is_closed_once_its_deadline_passes(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    process = start(["serve", "--cluster-file", str(CLUSTER), "--port", str(port),
                     "--threads", "2", "--head-timeout", "1"], log)
    try:
        wait_listening(port, process, log)
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"GET /heal")
        # head timeout 1 s, checked about once a second: closed well within 10 s
        assert sock.recv(1) == b""
        sock.close()
        big = socket.create_connection(("127.0.0.1", port), timeout=10)
        big.sendall(b"GET /healthz HTTP/1.1\r\nX-Long: " + b"a" * 70_000)
        answer = b""
        while chunk := big.recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 431 ")
        big.close()
    finally:
        stop(process)


def test_the_side_listener_serves_past_stalled_heads() -> None:
    listener = SideListener({"/healthz": health_route(always_ok)}, "127.0.0.1", 0,
                            head_timeout_s=0.5)
    listener.start()
    try:
        stalls = stalled_sockets(listener.port, PLAIN_STALLS)
        conn = http.client.HTTPConnection("127.0.0.1", listener.port, timeout=LEGIT_TIMEOUT_S)
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, b'{"status":"ok"}')
        # and each stall is closed once its head timeout (0.5 s) passes
        for sock in stalls:
            sock.settimeout(10)
            assert sock.recv(1) == b""
            sock.close()
    finally:
        listener.stop()
