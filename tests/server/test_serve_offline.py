"""``gpu-extender serve --cluster-file`` under real gunicorn: start, verbs over HTTP with
keep-alive, stop."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.server.conftest import DATA, fixture_bytes

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def request(conn: http.client.HTTPConnection, method: str, path: str,
            body: bytes | None = None) -> tuple[int, Any]:
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    try:
        return response.status, orjson.loads(data)
    except orjson.JSONDecodeError:
        return response.status, data.decode()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes], Path]]:
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "extender", "serve", "--cluster-file",
             str(DATA / "cluster.json"), "--port", str(port), "--threads", "4"],
            cwd=REPO, stdout=stderr, stderr=stderr,
            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                if request(conn, "GET", "/readyz")[0] == 200:
                    conn.close()
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.1)
        yield port, process, log
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


def test_offline_server_answers_verbs_and_records_binds(
        server: tuple[int, subprocess.Popen[bytes], Path]) -> None:
    port, process, log = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    status, result = request(conn, "POST", "/filter",
                             fixture_bytes("filter_typed_nodenames.json"))
    assert status == 200 and result["NodeNames"] == ["gpu-l4-0"]
    first_socket = conn.sock
    status, scores = request(conn, "POST", "/prioritize",
                             fixture_bytes("filter_typed_nodenames.json"))
    assert status == 200 and {"Host": "gpu-l4-0", "Score": 10} in scores
    status, bound = request(conn, "POST", "/bind", fixture_bytes("bind_typed.json"))
    assert status == 200 and bound == {"Error": ""}
    assert conn.sock is first_socket  # one keep-alive connection for all three

    # the bind is visible to the next filter: 8 L4 GPUs, one taken
    args = orjson.loads(fixture_bytes("filter_typed_nodenames.json"))
    args["Pod"]["metadata"].update(name="big-l4", uid="uid-big-l4")
    args["Pod"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
    status, result = request(conn, "POST", "/filter", orjson.dumps(args))
    assert result["NodeNames"] == []
    assert result["FailedNodes"]["gpu-l4-0"] == (
        "node has 1/8 accepted GPUs in use; the pod needs 8 free")

    status, malformed = request(conn, "POST", "/filter", b"{")
    assert status == 400 and malformed["Error"].startswith("body:")
    status, metrics = request(conn, "GET", "/metrics")
    assert status == 200 and 'gpu_extender_decisions_total{outcome="bound",verb="bind"} 1.0' \
        in metrics
    status, inventory = request(conn, "GET", "/debug/inventory?node=gpu-l4-0")
    assert inventory["nodes"][0]["holdings"][0]["pod"] == "ml/infer-l4-7f9c"
    conn.close()

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert lines and all(orjson.loads(line)["level"] for line in lines), lines[:5]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "extender", "serve", *args], cwd=REPO,
                          check=False,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_serve_refuses_a_bad_cluster_file_or_config(tmp_path: Path) -> None:
    missing = run_cli("--cluster-file", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    not_a_list = tmp_path / "pod.json"
    not_a_list.write_text('{"kind": "Pod"}')
    wrong = run_cli("--cluster-file", str(not_a_list))
    assert wrong.returncode == 2 and "kind: List" in wrong.stderr
    config = tmp_path / "bad.yaml"
    config.write_text("scoring:\n  strategy: nope\n")
    bad = run_cli("--config", str(config), "--cluster-file", str(DATA / "cluster.json"))
    assert bad.returncode == 1 and "scoring.strategy" in bad.stderr
