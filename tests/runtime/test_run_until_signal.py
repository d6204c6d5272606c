"""``run_until_signal``: the listener starts before the service and stops after it, the
started line is printed, and a SIGTERM/SIGINT (or a failing start) ends it with both stopped."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from extender.runtime.command import EXIT_OK, run_until_signal


class Part:
    def __init__(self, name: str, log: list[str], *, fail_start: bool = False) -> None:
        self.name, self.log, self.fail_start = name, log, fail_start

    def start(self) -> None:
        self.log.append(f"{self.name} start")
        if self.fail_start:
            raise RuntimeError("cannot start")

    def stop(self) -> None:
        self.log.append(f"{self.name} stop")


def signal_when_waiting(signum: int) -> threading.Thread:
    """Send ``signum`` to this process once ``wait_for_signal`` has installed its handler (a
    signal before that would end the test run)."""
    default = signal.getsignal(signum)

    def send() -> None:
        deadline = time.monotonic() + 30
        while signal.getsignal(signum) is default and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signum)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_listener_first_up_last_down(signum: int, capsys: pytest.CaptureFixture[str]) -> None:
    log: list[str] = []
    before = signal.getsignal(signum)
    sender = signal_when_waiting(signum)
    code = run_until_signal(Part("service", log), Part("listener", log), started="up at :1")
    sender.join(timeout=30)
    assert code == EXIT_OK
    assert log == ["listener start", "service start", "service stop", "listener stop"]
    assert capsys.readouterr().err == "up at :1\n"
    assert signal.getsignal(signum) is before  # the previous handler is back


def test_a_failing_start_still_stops_the_listener() -> None:
    log: list[str] = []
    with pytest.raises(RuntimeError, match="cannot start"):
        run_until_signal(Part("service", log, fail_start=True), Part("listener", log))
    assert log == ["listener start", "service start", "listener stop"]
