"""Kubernetes timestamps (``2026-12-01T23:00:00Z``, RFC 3339) as epoch seconds."""

from __future__ import annotations

from datetime import datetime


def epoch(value: object) -> float | None:
    """``None`` for a missing or malformed timestamp."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
