"""``gpu-extender serve`` under real gunicorn against careless and hostile clients: a body that
never arrives is answered 408 and frees its thread, a body over the limit is refused with 413,
and health checks on the monitoring port answer while every verb thread is stalled."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import DATA
from tests.server.test_serve_offline import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[tuple[int, int]]:
    port, monitoring = free_port(), free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "extender", "serve", "--cluster-file",
             str(DATA / "cluster.json"), "--port", str(port), "--threads", "2",
             "--monitoring-address", f"127.0.0.1:{monitoring}",
             "--body-read-timeout", "1", "--max-body-bytes", "4096"],
            cwd=REPO, stdout=out, stderr=out, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", monitoring, timeout=2)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield port, monitoring
    finally:
        process.terminate()
        process.wait(timeout=15)


def stalled(port: int) -> socket.socket:
    """A client that announces a 100-byte body and sends none of it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n")
    return sock


def read_answer(sock: socket.socket) -> bytes:
    """Headers and the whole body (by Content-Length) of one answer."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def test_stalled_bodies_get_408_and_health_answers_meanwhile(
        limited: tuple[int, int]) -> None:
    port, monitoring = limited
    clients = [stalled(port) for _ in range(6)]  # three times the two verb threads
    started = time.monotonic()
    health = http.client.HTTPConnection("127.0.0.1", monitoring, timeout=2)
    health.request("GET", "/healthz")
    assert health.getresponse().status == 200, "health is not behind the verb threads"
    for sock in clients:
        answer = read_answer(sock)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        assert b"not received within 1 s" in answer
        sock.close()
    # 6 stalls on 2 threads, 1 s each: about 3 s, not forever
    assert time.monotonic() - started < 10
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", "/filter", body=b"x" * 5000,
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 413
    assert b"Error" in response.read()
