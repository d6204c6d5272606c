"""The root logger writes to ``sys.stderr`` as it is at each record (``runtime.logs``)."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import pytest

from extender.runtime import logs


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Put the root logger back as it was (``configure`` replaces its handlers)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_a_record_goes_to_the_stderr_of_its_moment_not_a_closed_one(
        root_logging: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest swaps sys.stderr per test and closes the old one: a handler bound at configure
    # time would write to that closed file ("--- Logging error ---" from a watch thread)
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logs.configure("info", "text")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    monkeypatch.setattr(logging, "raiseExceptions", True)
    logging.getLogger("extender.sync.watch").info("listed")
    written = second.getvalue()
    assert "listed" in written and "Logging error" not in written
