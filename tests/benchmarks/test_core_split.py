"""``benchmarks/core_split.py``: every thread of a process tree moved, what it starts later
stays there, a one-CPU machine refused by name."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.core_split import CoreSplit, CoreSplitError, pin_threads

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                                reason="needs two CPUs this process may use")

# a process with a second thread, which starts a third once told (a line on stdin)
_CHILD = """
import sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("ready", flush=True)
sys.stdin.readline()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("started", flush=True)
time.sleep(60)
"""


def _allowed(pid: int) -> set[frozenset[int]]:
    """The distinct CPU sets of the process's threads."""
    sets = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        sets.add(frozenset(os.sched_getaffinity(int(task))))
    return sets


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_every_thread_is_moved_and_a_thread_started_later_inherits_it() -> None:
    split = CoreSplit.of_this_machine()
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        assert _threads(child.pid) == 2
        moved = pin_threads([child.pid], split.extender)
        assert moved == 2
        assert _allowed(child.pid) == {split.extender}
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "started"
        assert _threads(child.pid) == 3
        assert _allowed(child.pid) == {split.extender}  # the third inherited the mask
    finally:
        child.kill()
        child.wait()


def test_a_gone_process_moves_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child.pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pin_threads([child.pid], CoreSplit.of_this_machine().extender) == 0


def test_the_split_keeps_the_first_cpu_for_the_control_plane() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    split = CoreSplit.of_this_machine()
    assert split.control_plane == frozenset(cpus[:1])
    assert split.extender == frozenset(cpus[1:])
    assert split.describe().startswith(f"the control plane, kube-scheduler and this driver "
                                       f"on CPU {cpus[0]}, the extender on CPU ")


def test_one_cpu_is_refused_with_the_count() -> None:
    one = min(os.sched_getaffinity(0))
    script = ("from benchmarks.core_split import CoreSplit, CoreSplitError\n"
              "try:\n    CoreSplit.of_this_machine()\n"
              "except CoreSplitError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2],
                         preexec_fn=lambda: os.sched_setaffinity(0, {one}))
    assert out.stdout.strip() == "--extender-core needs at least 2 CPUs, this process may use 1"
    assert issubclass(CoreSplitError, RuntimeError)


def test_the_driver_is_confined_in_the_block_and_freed_after_it() -> None:
    split = CoreSplit.of_this_machine()
    before = _allowed(os.getpid())
    with split.driver_on_control_plane():
        assert _allowed(os.getpid()) == {split.control_plane}
    assert _allowed(os.getpid()) == before
