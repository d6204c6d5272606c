"""Overuse episodes: one Event (and one policy action) per episode, not per poll.

An episode of a (pod, device) starts at the first poll that sees the pod over its declaration
and ends at the first poll that does not; the next overuse is a new episode.
"""

from __future__ import annotations

from extender.agent.usage import Overuse


class EpisodeTracker:
    def __init__(self) -> None:
        self._open: set[tuple[str, str]] = set()

    def update(self, current: list[Overuse]) -> list[Overuse]:
        """The overuses that start a new episode in this poll."""
        keys = {o.key for o in current}
        started = [o for o in current if o.key not in self._open]
        self._open = keys
        return started

    @property
    def open_episodes(self) -> int:
        return len(self._open)
