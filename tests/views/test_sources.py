"""``inspect`` and ``explain`` take one source, spelled the same way (``runtime.kubectl``'s
``add_source_flags``): the kubeconfig's cluster (``--kubeconfig`` and ``--context`` together
are one source), ``--url`` or ``--cluster-file``; two are a usage error (exit 2) naming both."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.cli import main

P = pytest.param
CLUSTER = str(Path(__file__).resolve().parent.parent / "data" / "cluster.json")


@pytest.mark.parametrize("command", [P(["inspect"], id="inspect"),
                                     P(["explain", "ml/trainer-0"], id="explain")])
@pytest.mark.parametrize(("flags", "named"), [
    P(["--url", "http://127.0.0.1:1", "--cluster-file", CLUSTER],
      "--url and --cluster-file", id="url+file"),
    P(["--kubeconfig", "/nonexistent", "--url", "http://127.0.0.1:1"],
      "--url and --kubeconfig", id="kubeconfig+url"),
    P(["--context", "other", "--cluster-file", CLUSTER],
      "--cluster-file and --context", id="context+file"),
])
def test_two_sources_are_a_usage_error(command: list[str], flags: list[str], named: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, *flags]) == 2
    assert capsys.readouterr().err == f"error: {named}: choose one source\n"


@pytest.mark.parametrize("command", [P(["inspect"], id="inspect"),
                                     P(["explain", "ml/trainer-0"], id="explain")])
def test_kubeconfig_and_context_are_one_source(command: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing-kubeconfig"
    assert main([*command, "--kubeconfig", str(missing), "--context", "c1"]) == 1
    err = capsys.readouterr().err
    assert err == f"error: --kubeconfig {missing}: cannot read (No such file or directory)\n"


@pytest.mark.parametrize("command", [P(["inspect"], id="inspect"),
                                     P(["explain", "ml/trainer-0"], id="explain"),
                                     P(["what-if", "--pods", CLUSTER], id="what-if")])
def test_an_unreadable_cluster_file_is_a_usage_error_naming_the_flag(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    assert main([*command, "--cluster-file", str(missing)]) == 2  # docs/cli.md: an input file
    assert capsys.readouterr().err == (f"error: --cluster-file {missing}: cannot read (No such "
                                       "file or directory)\n")


@pytest.mark.parametrize("command", [P(["catalog"], id="catalog"),
                                     P(["inspect", "--cluster-file", CLUSTER], id="inspect")])
def test_o_is_the_format_and_the_old_output_spelling_still_works(
        command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "-o", "json"]) == 0
    short = capsys.readouterr().out
    assert main([*command, "--output", "json"]) == 0
    assert capsys.readouterr().out == short and short.startswith("{")
