"""``gpu_extender_thread_cpu_seconds``: each live thread's own CPU clock, by name."""

from __future__ import annotations

import os
import threading
import time

import pytest

from extender.server.metrics import ExtenderMetrics
from extender.server.thread_cpu import cpu_seconds_by_thread, thread_group


@pytest.mark.parametrize(("name", "group"), [
    ("ThreadPoolExecutor-0_3", "ThreadPoolExecutor-0"),  # a pool's workers sum up
    ("ThreadPoolExecutor-0_12", "ThreadPoolExecutor-0"),
    ("watch-pods", "watch-pods"),
    ("event-writer", "event-writer"),
    ("MainThread", "MainThread"),
])
def test_thread_group(name: str, group: str) -> None:
    assert thread_group(name) == group


def _spin(seconds: float, done: threading.Event) -> None:
    started = time.thread_time()
    while time.thread_time() - started < seconds:
        pass
    done.wait(10)


def test_a_busy_thread_is_charged_its_own_cpu_and_an_idle_one_nearly_none() -> None:
    done = threading.Event()
    busy = [threading.Thread(target=_spin, args=(0.1, done), name=f"spin-pool_{i}")
            for i in range(2)]
    idle = threading.Thread(target=done.wait, args=(10,), name="idle-one")
    for thread in (*busy, idle):
        thread.start()
    try:
        deadline = time.monotonic() + 10
        while cpu_seconds_by_thread(busy).get("spin-pool", 0.0) < 0.15:
            assert time.monotonic() < deadline, "the spinning threads were never charged"
            time.sleep(0.01)
        seconds = cpu_seconds_by_thread()
        # two workers of 0.1 s each, summed under the pool's name (10 ms ticks); the idle
        # thread ~0
        assert 0.15 <= seconds["spin-pool"] < 5
        assert seconds["idle-one"] < 0.05
        exposition = ExtenderMetrics().exposition().decode()
        assert 'gpu_extender_thread_cpu_seconds_total{thread="spin-pool"}' in exposition
        assert 'gpu_extender_thread_cpu_seconds_total{thread="idle-one"}' in exposition
    finally:
        done.set()
        for thread in (*busy, idle):
            thread.join()


def test_an_ended_thread_is_left_out() -> None:
    thread = threading.Thread(target=lambda: None, name="short-lived")
    thread.start()
    thread.join()
    assert "short-lived" not in cpu_seconds_by_thread([thread])


def test_the_main_thread_of_a_forked_worker_is_read_at_its_own_id() -> None:
    # gunicorn forks its workers; Python 3.11 leaves the parent's native id on the child's
    # main thread, whose /proc entry is then not the child's (the series went missing)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        started = time.thread_time()
        while time.thread_time() - started < 0.05:
            pass
        os.write(writer, repr(cpu_seconds_by_thread().get("MainThread")).encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as answer:
        seen = answer.read()
    os.waitpid(child, 0)
    assert seen != "None" and float(seen) >= 0.03
