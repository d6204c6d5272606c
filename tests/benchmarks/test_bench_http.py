"""bench_http runs as its docstring says, on small sizes: its stand-in metrics must keep up
with what ``VerbRoute`` calls (a missing one made every gunicorn part fail to boot)."""

from __future__ import annotations

import pytest

from benchmarks.bench_http import APPS, body, main, time_wsgi


@pytest.mark.parametrize("name", ["flask", "routes"])
def test_each_app_answers_the_verb_in_process(name: str) -> None:
    assert time_wsgi(APPS[name](), body(10), 5) > 0


def test_the_gunicorn_part_serves_every_app_under_our_worker(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--part", "gunicorn", "--names", "10", "--calls", "20"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("gunicorn ")]
    assert [line.split()[1] for line in lines] == list(APPS)
    # 20 calls can fall inside one clock tick of /proc's CPU times: a number, maybe 0
    assert all(float(line.split()[3]) >= 0 for line in lines)
