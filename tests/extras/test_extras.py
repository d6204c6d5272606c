"""Ship by role (issue 20): a wheel built from this tree, installed with each extra into a fresh
venv, runs that role's command, and lacks what other roles need.

- the core alone: ``--help`` and ``check-config`` work; ``serve`` names the extra it needs;
- ``[serve]``: the extender starts for real (offline) and answers /healthz, without pynvml,
  gRPC or protobuf;
- ``[agent]``: one real agent pass on the documented fixture, without Flask or gunicorn;
- ``[webhook]``: webhook-certs writes a certificate, the webhook starts and answers /healthz
  (with the kubernetes client, for its node watch and the agent's Evictions);
- ``[sim]``: ``simulate --help``.

Slow (a venv and an install per role, a few minutes in all): ``make check-extras`` runs it
(marker ``extras``); pip takes wheels from ``$PIP_FIND_LINKS`` / ``/opt/wheels`` where present
and from its index otherwise.
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

pytestmark = pytest.mark.extras

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "agent"


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(REPO),
                 "-w", str(out)])
    assert built.returncode == 0, built.stderr
    [path] = out.glob("gpu_extender-*.whl")
    return path


def install(wheel: Path, where: Path, extra: str | None) -> Path:
    """A fresh venv with the wheel (and ``extra``); its bin directory."""
    created = run([sys.executable, "-m", "venv", str(where)])
    assert created.returncode == 0, created.stderr
    links = [arg for d in (os.environ.get("PIP_FIND_LINKS", ""), "/opt/wheels")
             for arg in ("--find-links", d) if d and Path(d).is_dir()]
    requirement = f"gpu-extender[{extra}]" if extra else "gpu-extender"
    done = run([str(where / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                "--find-links", str(wheel.parent), *links, requirement])
    assert done.returncode == 0, done.stderr
    return where / "bin"


def importable(bin_dir: Path, module: str) -> bool:
    return run([str(bin_dir / "python"), "-c", f"import {module}"]).returncode == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_status(connect: object, path: str, process: subprocess.Popen[bytes],
                log: Path) -> int:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, log.read_text()
        try:
            conn = connect()  # type: ignore[operator]
            conn.request("GET", path)
            return int(conn.getresponse().status)
        except OSError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)


def test_the_core_alone_runs_help_and_check_config_and_names_missing_extras(
        wheel: Path, tmp_path: Path) -> None:
    bin_dir = install(wheel, tmp_path / "venv", None)
    assert not importable(bin_dir, "flask") and not importable(bin_dir, "kubernetes")
    assert run([str(bin_dir / "gpu-extender"), "--help"]).returncode == 0
    checked = run([str(bin_dir / "gpu-extender"), "check-config",
                   str(REPO / "extender" / "config" / "default.yaml")])
    assert checked.returncode == 0, checked.stderr
    serve = run([str(bin_dir / "gpu-extender"), "serve", "--help"])
    assert serve.returncode == 1
    assert "pip install 'gpu-extender[serve]'" in serve.stderr, serve.stderr
    assert "Traceback" not in serve.stderr


def test_serve_starts_without_nvml_grpc_or_protobuf(
        wheel: Path, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    bin_dir = install(wheel, tmp_path / "venv", "serve")
    for module in ("pynvml", "grpc", "google.protobuf"):
        assert not importable(bin_dir, module), module
    port, log = free_port(), tmp_path / "serve.log"
    with log.open("wb") as out:
        started.append(subprocess.Popen(
            [str(bin_dir / "gpu-extender"), "serve", "--cluster-file",
             str(REPO / "tests" / "data" / "cluster.json"), "--port", str(port)],
            stdout=out, stderr=out, cwd=tmp_path))
    assert wait_status(lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=5),
                       "/healthz", started[0], log) == 200


def test_the_agent_runs_a_pass_without_flask_or_gunicorn(wheel: Path, tmp_path: Path) -> None:
    bin_dir = install(wheel, tmp_path / "venv", "agent")
    assert not importable(bin_dir, "flask") and not importable(bin_dir, "gunicorn")
    ran = run([str(bin_dir / "gpu-extender"), "agent", "--node-name", "gpu-node-1",
               "--nvml-fixture", str(EXAMPLE / "fixture.json"), "--proc-root",
               str(EXAMPLE / "proc"), "--pods-file", str(EXAMPLE / "pods.json"), "--once",
               "--print"])
    assert ran.returncode == 0, ran.stderr
    assert '"overuse"' in ran.stdout


def test_the_webhook_starts_with_its_own_certificate(
        wheel: Path, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    bin_dir = install(wheel, tmp_path / "venv", "webhook")
    # kubernetes: the node watch (--watch-nodes) and the agent's Evictions (--agent-user)
    assert importable(bin_dir, "kubernetes") and not importable(bin_dir, "pynvml")
    certs = run([str(bin_dir / "gpu-extender"), "webhook-certs", "--out-dir",
                 str(tmp_path / "tls"), "--ip", "127.0.0.1"])
    assert certs.returncode == 0, certs.stderr
    port, log = free_port(), tmp_path / "webhook.log"
    with log.open("wb") as out:
        started.append(subprocess.Popen(
            [str(bin_dir / "gpu-extender"), "webhook", "--host", "127.0.0.1", "--port",
             str(port), "--tls-cert-file", str(tmp_path / "tls" / "tls.crt"),
             "--tls-private-key-file", str(tmp_path / "tls" / "tls.key")],
            stdout=out, stderr=out, cwd=tmp_path))
    context = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.crt"))
    assert wait_status(lambda: http.client.HTTPSConnection("127.0.0.1", port, timeout=5,
                                                           context=context),
                       "/healthz", started[0], log) == 200


def test_simulate_runs_with_the_sim_extra(wheel: Path, tmp_path: Path) -> None:
    bin_dir = install(wheel, tmp_path / "venv", "sim")
    assert importable(bin_dir, "scipy")
    helped = run([str(bin_dir / "gpu-extender"), "simulate", "--help"])
    assert helped.returncode == 0, helped.stderr
