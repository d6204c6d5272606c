"""``gpu-extender simulate``: a generated run end to end, and bad inputs that get one clear
``error:`` line (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender.cli import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8,G2\nn1,104000,524288,2,T4\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "p0,12000,16384,1,1000,\np1,6000,12288,1,470,T4\np2,4000,8192,0,0,\n")


def test_generated_run_writes_json_and_a_summary(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result.json"
    code = main(["simulate", "--synthetic-nodes", "12", "--policy", "fgd", "--seed", "3",
                 "--output", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "policy fgd, seed 3" in printed and str(out) in printed
    data = json.loads(out.read_text())
    assert data["policy"] == "fgd" and data["seed"] == 3
    assert data["trace"] == "synthetic-3"
    pcts = [p["arrived_pct"] for p in data["curve"]]
    assert pcts == sorted(pcts) and 100 in pcts  # a small cluster may skip the first 1 %s


def test_trace_files_and_the_default_policy(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    nodes = tmp_path / "nodes.csv"
    pods = tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    assert main(["simulate", "--nodes", str(nodes), "--pods", str(pods), "--inflate",
                 "0"]) == 0
    printed = capsys.readouterr().out
    assert "3 arrived, 3 placed, 0 failed" in printed
    assert "policy cost-fragmentation" in printed  # the service default


@pytest.mark.parametrize(("args", "fragment"), [
    pytest.param(["--nodes", "NODES"], "--nodes needs --pods too", id="half a trace"),
    pytest.param(["--nodes", "NODES", "--pods", "MISSING"], "MISSING: cannot read",
                 id="missing file"),
    pytest.param(["--nodes", "BADPODS", "--pods", "BADPODS"], "missing column(s)",
                 id="wrong columns"),
    pytest.param(["--policy", "tetris"], "'tetris' is not a registered strategy; accepted:",
                 id="unknown policy"),
    pytest.param(["--fleet", "MISSING"], "MISSING: cannot read", id="missing fleet"),
])
def test_bad_inputs_get_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       args: list[str], fragment: str) -> None:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    paths = {"NODES": str(tmp_path / "nodes.csv"), "MISSING": str(tmp_path / "none.csv"),
             "BADPODS": str(tmp_path / "bad.csv")}
    argv = ["simulate", "--synthetic-nodes", "4", *[paths.get(a, a) for a in args]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert fragment.replace("MISSING", paths["MISSING"]) in err


@pytest.mark.parametrize(("args", "fragment"), [
    (["--inflate", "lots"], "must be a number, got 'lots'"),
    (["--inflate", "-1"], "must be between 0 and 10"),
    (["--seed", "x"], "must be an integer"),
    (["--tie-break", "coin"], "invalid choice: 'coin'"),
])
def test_bad_numbers_are_usage_errors(capsys: pytest.CaptureFixture[str], args: list[str],
                                      fragment: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", *args])
    assert info.value.code == 2
    assert fragment in capsys.readouterr().err


def test_progress_goes_to_stderr_a_line_per_ten_percent_off_a_terminal(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--synthetic-nodes", "12", "--policy", "fgd", "--seed", "3"]) == 0
    lines = capsys.readouterr().err.splitlines()
    percents = [int(line.rsplit("(", 1)[1].split(" ")[0]) for line in lines
                if line.startswith("simulate: ")]
    # 0 %, then one line each time a tenth is passed, and the end
    assert percents[0] == 0 and percents[-1] == 100
    assert percents == sorted(percents) and 5 <= len(percents) <= 12
    assert main(["simulate", "--synthetic-nodes", "12", "--seed", "3", "--no-progress"]) == 0
    assert "simulate: " not in capsys.readouterr().err
