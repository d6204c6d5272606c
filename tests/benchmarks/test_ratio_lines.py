"""``bench_scheduler.ratio_lines``: every extender run against the mean of the plain runs
beside it (a mode run twice used to be reported by its last run only)."""

from __future__ import annotations

from benchmarks.bench_scheduler import Result, ratio_lines


def _run(mode: str, pods_per_s: float) -> Result:
    # pods_per_s = (bound - 1) / burst_s: 101 pods over 1 s is 100 pods/s
    return Result(mode, 1000, 101, 101, 100 / pods_per_s, 1.0)


def test_each_run_against_the_mean_of_the_plain_runs() -> None:
    results = {"plain": [_run("plain", 200.0), _run("plain", 250.0)],
               "extender": [_run("extender", 180.0), _run("extender", 135.0)]}
    # plain mean (200 + 250) / 2 = 225: 180 / 225 = 0.80, 135 / 225 = 0.60
    assert ratio_lines(1000, results) == [
        "nodes= 1000 ratio extender/plain = 0.80, 0.60 (plain: the mean of 2 runs, "
        "225.0 pods/s)"]


def test_one_run_each_and_stock_beside() -> None:
    results = {"plain": [_run("plain", 200.0)], "stock": [_run("stock", 400.0)],
               "extender": [_run("extender", 150.0)], "base": [_run("base", 100.0)]}
    assert ratio_lines(5000, results) == [
        "nodes= 5000 ratio extender/plain = 0.75 (plain: its run, 200.0 pods/s)",
        "nodes= 5000 ratio extender/stock = 0.38 (stock: its run, 400.0 pods/s)",
        "nodes= 5000 ratio base/plain = 0.50 (plain: its run, 200.0 pods/s)",
        "nodes= 5000 ratio base/stock = 0.25 (stock: its run, 400.0 pods/s)"]


def test_no_plain_run_no_ratio() -> None:
    assert ratio_lines(1000, {"extender": [_run("extender", 150.0)]}) == []
