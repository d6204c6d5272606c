"""bench_preempt runs as its docstring says, on more than one candidate node (on two it
raised until the what-if rows took the candidate's DRA flag; ``tests/core/test_preempt.py``)."""

from __future__ import annotations

import pytest

from benchmarks.bench_preempt import main


def test_every_request_finds_its_victims_on_each_of_two_nodes(
        capsys: pytest.CaptureFixture[str]) -> None:
    main(["--nodes", "2", "--reps", "1"])
    lines = capsys.readouterr().out.splitlines()
    # a 14 GiB share: three 6 GiB pods of one GPU; a whole GPU: its four; four GPUs: 16
    assert [line.rsplit(",", 1)[1].strip(" )") for line in lines] == \
        ["3 victims", "4 victims", "16 victims"]
