"""The pure part of a watch: bytes -> lines -> events, and the resourceVersion cursor.

No I/O and no threads, so every case (bookmarks, ``ERROR`` 410, unknown event types, a line
split across chunks) is tested with scripted byte streams.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from extender.apiserver.errors import KubeError, error_for_status
from extender.errors import JsonObjectError
from extender.jsonobj import load_object
from extender.kube import objects

APPLIED_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})


class LineBuffer:
    """Reassembles newline-delimited JSON from arbitrary chunks."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        return [line for line in lines if line.strip()]

    @property
    def pending(self) -> bytes:
        """An incomplete last line (a connection dropped mid-event)."""
        return self._partial


class StepKind(Enum):
    APPLY = "apply"
    """ADDED / MODIFIED / DELETED: hand the object to the inventory."""
    BOOKMARK = "bookmark"
    """Only moves the resourceVersion forward."""
    SKIP = "skip"
    """An event type we do not know; ignored."""


@dataclass(frozen=True)
class WatchStep:
    kind: StepKind
    event_type: str
    obj: dict[str, Any]


class WatchCursor:
    """Where to resume: the resourceVersion of the last event seen (bookmarks included,
    which the Python client's own ``Watch`` ignored before v36)."""

    def __init__(self, resource_version: str) -> None:
        self.resource_version = resource_version

    def interpret(self, line: bytes) -> WatchStep:
        """One event line; raises ``Gone`` on an ``ERROR`` 410 (relist) and ``KubeError``
        on any other ``ERROR`` event or an unreadable line (reconnect)."""
        try:
            event = load_object(line, "watch event")
        except JsonObjectError as exc:
            raise KubeError(f"{exc}: {line[:120]!r}") from exc
        event_type = str(event.get("type", ""))
        obj = event.get("object")
        if not isinstance(obj, dict):
            obj = {}
        if event_type == "ERROR":
            code = obj.get("code")
            raise error_for_status(code if isinstance(code, int) else 500,
                                   f"watch error: {obj.get('message', obj)}",
                                   str(obj.get("reason", "")))
        if event_type in APPLIED_TYPES or event_type == "BOOKMARK":
            version = objects.resource_version(obj)
            if version:
                self.resource_version = str(version)
            kind = StepKind.APPLY if event_type in APPLIED_TYPES else StepKind.BOOKMARK
            return WatchStep(kind, event_type, obj)
        return WatchStep(StepKind.SKIP, event_type, obj)
