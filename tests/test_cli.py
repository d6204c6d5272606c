"""``gpu-extender check-config FILE``: a summary on success, every error with its field path on
failure, and a clear message (never a traceback) for unreadable or non-YAML files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from extender.cli import main

P = pytest.param
ROOT = Path(__file__).parents[1]
DEFAULT_YAML = ROOT / "extender" / "config" / "default.yaml"
SCRIPT = Path(sys.executable).parent / "gpu-extender"

BROKEN = """\
accelerators:
  - id: t4
    price: -1
nodeLabels:
  presets: [gfd, eks]
protection:
  namespaces:
    research: [a1000]
scoring:
  strategy: cheapest
service:
  checkCpuMemory: maybe
"""
BROKEN_PATHS = ["accelerators[0].price", "nodeLabels.presets[1]",
                "protection.namespaces.research[0]", "scoring.strategy",
                "service.checkCpuMemory"]


def check_config(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check-config", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_shipped_default_config_passes_with_a_summary(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check_config(DEFAULT_YAML, capsys)
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"{DEFAULT_YAML}: OK"
    assert "accelerators: 19 types (9 protected)" in out
    assert "node label presets: gfd, gke, eks-karpenter, aks, flyte; custom mappings: 0" in out
    assert "scoring strategy: cost-fragmentation (available: " in out
    assert "best-fit" in out and "fgd" in out


def test_a_broken_config_fails_with_every_error_and_its_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN)
    code, out, err = check_config(broken, capsys)
    assert code == 1
    assert out == ""
    assert f"{broken} is invalid (5 error(s)):" in err
    for path in BROKEN_PATHS:
        assert f"  - {path}: " in err
    assert "unknown strategy 'cheapest'; accepted: best-fit" in err, \
        "the registered strategies are checked"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        P(None, "(file): cannot read: No such file or directory", id="a missing file"),
        P("scoring: [\n", "(file): not valid YAML", id="a file that is not YAML"),
        P("- a list\n", "(file): must be a mapping, got list", id="a YAML list"),
        P(b"\xff\xfe\x00binary", "(file): not a UTF-8 text file", id="a binary file"),
    ],
)
def test_unusable_files_give_a_clear_message_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes | None,
        expected: str) -> None:
    path = tmp_path / "config.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    code, _, err = check_config(path, capsys)
    assert code == 1
    assert expected in err
    assert "Traceback" not in err


def test_a_directory_is_a_clear_error(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = check_config(tmp_path, capsys)
    assert code == 1
    assert "(file): cannot read: Is a directory" in err


def test_check_config_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["check-config"])
    assert raised.value.code == 2
    assert "the following arguments are required: file" in capsys.readouterr().err


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main([])
    assert raised.value.code == 2
    assert "check-config" in capsys.readouterr().err


@pytest.mark.skipif(not SCRIPT.exists(), reason="console script not installed next to python")
class TestConsoleScript:
    """The installed ``gpu-extender`` entry point, as a user runs it."""

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True,
                              timeout=60, check=False, cwd=ROOT)

    def test_default_config_exits_zero(self) -> None:
        result = self.run("check-config", "extender/config/default.yaml")
        assert result.returncode == 0, result.stderr
        assert "extender/config/default.yaml: OK" in result.stdout

    def test_broken_config_exits_non_zero_with_every_path(self, tmp_path: Path) -> None:
        broken = tmp_path / "broken.yaml"
        broken.write_text(BROKEN)
        result = self.run("check-config", str(broken))
        assert result.returncode == 1
        assert all(f"  - {path}: " in result.stderr for path in BROKEN_PATHS)
        assert "Traceback" not in result.stderr

    def test_missing_file_exits_non_zero_without_a_traceback(self, tmp_path: Path) -> None:
        result = self.run("check-config", str(tmp_path / "missing.yaml"))
        assert result.returncode == 1
        assert "cannot read: No such file or directory" in result.stderr
        assert "Traceback" not in result.stderr


def test_python_dash_m_extender_runs_the_same_command() -> None:
    result = subprocess.run([sys.executable, "-m", "extender", "check-config", str(DEFAULT_YAML)],
                            capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert ": OK" in result.stdout


@pytest.mark.parametrize(("argv", "usage"), [
    P(["inspect", "-h"], "usage: kubectl gpu inspect ", id="inspect"),
    P(["catalog", "-h"], "usage: kubectl gpu catalog ", id="catalog"),
    P(["explain", "-h"], "usage: kubectl gpu explain ", id="explain"),
])
def test_the_kubectl_plugin_names_itself_in_usage(argv: list[str], usage: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from extender.cli import kubectl_main

    with pytest.raises(SystemExit) as exited:  # argparse's -h
        kubectl_main(argv)
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(usage)
