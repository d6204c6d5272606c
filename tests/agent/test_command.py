"""``gpu-extender agent --once --print`` on the documented example (whole, MIG and shared
GPUs, four cgroup layouts), and clear errors for bad input."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from extender.agent.config import OverusePolicy, parse_agent_config
from extender.cli import main
from extender.errors import ConfigError
from localcluster.binaries import REPO_ROOT

EXAMPLE = REPO_ROOT / "docs" / "examples" / "agent"
ARGS = ["agent", "--node-name", "gpu-node-1", "--nvml-fixture", str(EXAMPLE / "fixture.json"),
        "--proc-root", str(EXAMPLE / "proc"), "--pods-file", str(EXAMPLE / "pods.json"),
        "--once", "--print"]


def test_once_print_reports_annotation_usage_and_overuse(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    assert main(ARGS) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert set(out) >= {"annotation", "usage", "overuse"}
    gpus = out["annotation"]["gpus"]
    assert [(g["type"], "mig" in g, g.get("healthy", True)) for g in gpus] == [
        ("a100-80gb", False, True), ("a100-80gb", True, True), ("l4", False, True),
        ("l4", False, False)]  # GPU 2 only had an application XID (13); GPU 3 fell off (79)
    keys = {"namespace", "pod", "container", "uuid", "usedMiB", "declaredMiB"}
    assert all(keys <= set(u) for u in out["usage"] + out["overuse"])
    assert {(u["pod"], u["usedMiB"], u["declaredMiB"]) for u in out["usage"]} == {
        ("train", 61000, 81920), ("mig-job", 5000, 9856), ("infer-a", 3000, 4096),
        ("infer-b", 7000, 4096)}
    assert [(o["pod"], o["usedMiB"], o["declaredMiB"]) for o in out["overuse"]] == [
        ("infer-b", 7000, 4096)]


def test_a_bad_fixture_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    bad = tmp_path / "f.json"
    bad.write_text('{"gpus": [{"index": 0}]}')
    args = [*ARGS]
    args[args.index("--nvml-fixture") + 1] = str(bad)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "gpus[0].uuid: None (accepted: a non-empty string)" in err
    assert "Traceback" not in err


def test_agent_config_defaults_and_every_error_with_its_path(tmp_path: Path) -> None:
    assert parse_agent_config({}).overuse_policy is OverusePolicy.WARN
    assert parse_agent_config({"overusePolicy": "evict"}).overuse_policy is OverusePolicy.EVICT
    with pytest.raises(ConfigError) as error:
        parse_agent_config({"overusePolicy": "kill", "intervalSeconds": 0, "metricsPort": 70000,
                            "timeSlicing": {"replicas": -1, "resource": "nvidia.com/gpux"},
                            "colour": "blue"})
    text = str(error.value)
    for fragment in ("colour: unknown field; accepted: intervalSeconds, ",
                     "overusePolicy: 'kill'; accepted: evict, warn",
                     "intervalSeconds: must be > 0, got 0", "metricsPort: must be 0..65535, got "
                     "70000", "timeSlicing.replicas: must be 0..1024, got -1",
                     "timeSlicing.resource: 'nvidia.com/gpux'; accepted: nvidia.com/gpu, "
                     "nvidia.com/gpu.shared"):
        assert fragment in text
    assert len(error.value.errors) == 6


def test_without_a_driver_nvml_fails_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    if Path("/dev/nvidiactl").exists():  # pragma: no cover - a GPU machine
        pytest.skip("this machine has an NVIDIA driver: hack/gpu-check.sh covers it")
    args = [a for a in ARGS if a not in ("--nvml-fixture", str(EXAMPLE / "fixture.json"))]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "NVML could not start" in err and "--nvml-fixture" in err


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_long_running_agent_serves_metrics_and_stops_on_sigterm(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    port = free_port()
    config = tmp_path / "agent.yaml"
    config.write_text(f"intervalSeconds: 0.2\nmetricsPort: {port}\nmetricsHost: 127.0.0.1\n")
    args = [a for a in ARGS if a not in ("--once", "--print")]
    process = subprocess.Popen([sys.executable, "-m", "extender", *args, "--config", str(config)],
                               cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline and "overuse_episodes_total{" not in text:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                time.sleep(0.2)
        assert 'pod="infer-b"' in text and "gpu_extender_agent_gpu_healthy" in text
        assert 'gpu_extender_agent_passes_total{outcome="ok"}' in text
        for path, body in (("/healthz", b'{"status":"ok"}'), ("/readyz", b'{"status":"ready"}')):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                assert (r.status, r.read()) == (200, body)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "stopping" in (process.stderr.read() if process.stderr else "")


def test_once_exits_1_when_the_api_server_cannot_be_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # nothing listens on port 9 of loopback: the node and its pods cannot be read
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {}}]\n")
    args = [a for a in ARGS if a not in ("--pods-file", str(EXAMPLE / "pods.json"))]
    code = main([*args, "--kubeconfig", str(kubeconfig)])
    assert code == 1
    err = capsys.readouterr().err
    assert "the API server could not be read (read node, list pods" in err
