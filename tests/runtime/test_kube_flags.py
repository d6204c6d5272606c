"""``--kubeconfig`` / ``--context`` checked before the kube client reads them: the error names
the flag, the file and the contexts there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.runtime.kubectl import kube_flags_problem

P = pytest.param


def kubeconfig(path: Path, *contexts: str) -> str:
    path.write_text("apiVersion: v1\nkind: Config\ncontexts:\n" + "".join(
        f"- name: {c}\n  context: {{cluster: c, user: u}}\n" for c in contexts))
    return str(path)


@pytest.mark.parametrize(("flags", "env", "problem"), [
    P(("A", None), [], None, id="a readable kubeconfig"),
    P(("A", "prod"), [], None, id="its context"),
    P(("MISSING", None), [], "--kubeconfig MISSING: cannot read (No such file or directory)",
      id="a kubeconfig that does not exist"),
    P(("A", "staging"), [], "--context 'staging': no such context in A (contexts: dev, prod)",
      id="a context the kubeconfig lacks, with those it has"),
    P((None, "other"), ["A", "B"], None, id="$KUBECONFIG's second file has it"),
    P((None, "nope"), ["A", "MISSING", "B"],
      "--context 'nope': no such context in A, MISSING, B (contexts: dev, other, prod)",
      id="$KUBECONFIG: every file named, the readable ones' contexts"),
])
def test_the_flag_and_the_file_are_named(flags: tuple[str | None, str | None], env: list[str],
                                         problem: str | None, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"A": kubeconfig(tmp_path / "a", "prod", "dev"),
             "B": kubeconfig(tmp_path / "b", "other"), "MISSING": str(tmp_path / "missing")}
    monkeypatch.setenv("KUBECONFIG", ":".join(files[e] for e in env))
    path, context = flags
    got = kube_flags_problem(files[path] if path else None, context)
    for name, file in files.items():
        got = got.replace(file, name) if got else got
    assert got == problem
