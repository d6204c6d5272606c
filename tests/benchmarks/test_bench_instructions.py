"""``benchmarks/bench_instructions.py``: the burst it counts is the same burst every time (the
difference of two counted runs is only meaningful then), and the count is read from
callgrind's log."""

from __future__ import annotations

from benchmarks.bench_instructions import collected, run_burst


def test_the_burst_decides_the_same_nodes_every_time() -> None:
    # 12 nodes x 8 GPUs, 30 pods: the digest of the chosen nodes is a function of the code
    first = run_burst(12, 5, 25, driver_only=False)
    assert run_burst(12, 5, 25, driver_only=False) == first
    # more pods, another sequence of choices
    assert run_burst(12, 5, 26, driver_only=False) != first


def test_the_driver_alone_calls_no_verb_and_chooses_otherwise() -> None:
    # the driver's own choice (a name by position) is not the extender's
    assert run_burst(12, 5, 25, driver_only=True) != run_burst(12, 5, 25, driver_only=False)


def test_the_count_is_read_from_callgrinds_log() -> None:
    log = ("==301== Callgrind, a call-graph generating cache profiler\n"
           "==301== Events    : Ir\n==301== Collected : 4945894688\n==301==\n"
           "==301== I   refs:      4,945,894,688\n")
    assert collected(log) == 4_945_894_688
    assert collected("==301== error: no such file\n") is None
