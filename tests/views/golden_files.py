"""Golden-output comparison: ``GOLDEN_UPDATE=1 pytest tests/views`` rewrites the files (review
the diff before committing)."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("GOLDEN_UPDATE"):
        path.write_text(text + "\n", encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    assert text + "\n" == expected, f"{name} differs (GOLDEN_UPDATE=1 to accept)"
    assert max(map(len, text.splitlines())) <= 100, f"{name}: a line is over 100 columns"
