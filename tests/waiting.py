"""Waiting for what another thread does (a watch, the event writer), with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(condition: Callable[[], object], timeout: float = 5.0) -> None:
    """Return once ``condition()`` is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)
