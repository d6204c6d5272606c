"""Background threads under ``SCHED_BATCH`` (``runtime.background``): the thread that answers
kube-scheduler keeps the default policy; every other thread of the serving worker (watches,
event writer, bind pool, monitoring listener) never preempts it on waking."""

from __future__ import annotations

import http.client
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from extender.runtime import background
from extender.runtime.background import background_threads_yield, yield_on_wakeup
from tests.runtime.test_head_deadline import CLUSTER, free_port, start, stop, wait_listening

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="SCHED_BATCH is Linux's")


def _policy(native_id: int = 0) -> int:
    return os.sched_getscheduler(native_id)


def test_a_thread_yields_itself_and_the_process_owner_yields_its_siblings() -> None:
    release = threading.Event()
    seen: list[int] = []

    def own() -> None:
        seen.append(int(yield_on_wakeup()))
        seen.append(_policy())

    first = threading.Thread(target=own)
    first.start()
    first.join()
    assert seen == [1, os.SCHED_BATCH]
    sibling = threading.Thread(target=release.wait)
    sibling.start()
    try:
        assert sibling.native_id is not None
        assert _policy(sibling.native_id) == os.SCHED_OTHER
        assert background_threads_yield() >= 1
        assert _policy(sibling.native_id) == os.SCHED_BATCH
        assert _policy() == os.SCHED_OTHER  # the caller is the one that answers
    finally:
        release.set()
        sibling.join()


def test_a_refused_switch_keeps_the_default_and_never_raises(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(background.os, "sched_setscheduler", refused)
    assert yield_on_wakeup() is False
    assert _policy() == os.SCHED_OTHER


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[int, int]]:
    port = free_port()
    log = tmp_path / "serve.log"
    process = start(["serve", "--cluster-file", str(CLUSTER), "--port", str(port),
                     "--threads", "2", "--monitoring-address", f"127.0.0.1:{free_port()}"],
                    log)
    try:
        wait_listening(port, process, log)
        yield process.pid, port
    finally:
        stop(process)


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _thread_policies(pid: int) -> dict[int, int]:
    """Each thread's scheduling policy (``/proc/PID/task/TID/stat`` field 41)."""
    policies = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        policies[int(task.name)] = int(fields[38])  # fields after the name start at field 3
    return policies


def test_only_the_answering_thread_of_serve_keeps_the_default_policy(
        serving: tuple[int, int]) -> None:
    master, port = serving
    # a request through gunicorn's own path starts a pool thread
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200
    conn.close()
    (worker,) = _children(master)
    policies = _thread_policies(worker)
    assert policies.pop(worker) == os.SCHED_OTHER  # the event loop: filter and prioritize
    assert len(policies) >= 3  # the event writer, the pool thread, the monitoring listener
    assert set(policies.values()) == {os.SCHED_BATCH}, policies
