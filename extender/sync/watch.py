"""List then watch one resource kind, forever, in a thread this object owns.

The loop (client-go's reflector, reduced to what we need):

1. list (raw JSON, paginated) and hand the whole list to ``sink.replace``;
2. watch from the list's resourceVersion with bookmarks; every event moves the cursor;
3. the server ends the stream (its timeout) or the connection drops: reconnect from the
   cursor, with exponential backoff after errors;
4. ``ERROR`` 410 (the cursor fell out of the watch cache): relist, then watch again;
5. ``request_relist`` (the reconciler) does 1-2 again without waiting for a 410; because the
   watch restarts from the new list's resourceVersion, nothing that happened after the list
   is lost (which a relist applied beside a running watch could not promise).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from extender.apiserver.client import ResourceKind, ResourceLister, WatchStream
from extender.apiserver.errors import Gone, KubeError
from extender.sync.stream import LineBuffer, StepKind, WatchCursor

_log = logging.getLogger(__name__)

INITIAL = "initial"
"""Relist reason of the first list (not a repair)."""


@dataclass(frozen=True)
class ResourceSink:
    """Where the objects of one kind go."""

    apply: Callable[[str, dict[str, Any]], None]
    """One watch event: ``(type, object)``."""
    replace: Callable[[list[dict[str, Any]]], dict[str, int]]
    """A complete list; returns what it repaired (``Inventory.replace_all``'s counts)."""


class Backoff:
    """Exponential delays with full jitter, reset after a healthy stream."""

    def __init__(self, initial: float = 0.5, maximum: float = 30.0, *,
                 rng: random.Random | None = None) -> None:
        self._initial = initial
        self._maximum = maximum
        self._attempt = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        ceiling = min(self._maximum, self._initial * 2 ** self._attempt)
        self._attempt += 1
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def reset(self) -> None:
        self._attempt = 0


RestartHook = Callable[[str, str], None]
"""``(kind, reason)``: the watch restarts (reason: gone, error, reconcile...)."""
RelistHook = Callable[[str, str, dict[str, int]], None]
"""``(kind, reason, repairs)`` after every relist except the initial one."""


class ResourceWatcher:
    def __init__(self, kind: ResourceKind, api: ResourceLister, sink: ResourceSink, *,
                 timeout_seconds: int = 300, backoff: Backoff | None = None,
                 on_restart: RestartHook | None = None, on_relisted: RelistHook | None = None,
                 on_synced: Callable[[], None] | None = None,
                 start_after: threading.Event | None = None,
                 healthy_after: float = 5.0) -> None:
        self.kind = kind
        self._api = api
        self._sink = sink
        self._timeout = timeout_seconds
        self._backoff = backoff or Backoff()
        self._on_restart = on_restart or (lambda kind, reason: None)
        self._on_relisted = on_relisted or (lambda kind, reason, repairs: None)
        self._on_synced = on_synced or (lambda: None)
        self._start_after = start_after
        self._healthy_after = healthy_after
        self._stop = threading.Event()
        self._relist_reason: str | None = INITIAL
        self._stream: WatchStream | None = None
        self._stream_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.synced = threading.Event()
        self.cursor = WatchCursor("")
        self.events_applied = 0
        self.events_failed = 0
        self.lists_failed_in_a_row = 0
        """Relists that failed since the last one that worked (``running`` reads it)."""

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"watch-{self.kind}",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._abort_stream()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    FAILED_LISTS_NOT_RUNNING = 3
    """Relists failing in a row after which the watch counts as not running (one failure is
    an API server blip the backoff retries; three in a row, a watch that never comes back)."""

    def running(self) -> bool:
        """Whether the loop is alive and keeping up: its thread runs and its relists work (a
        relist that fails every time, e.g. on an object it cannot apply, is a watch that never
        runs again, however long the thread lives)."""
        thread = self._thread
        return thread is not None and thread.is_alive() and not self._stop.is_set() and \
            self.lists_failed_in_a_row < self.FAILED_LISTS_NOT_RUNNING

    def request_relist(self, reason: str = "reconcile") -> None:
        """Relist at the next opportunity (the open stream is aborted)."""
        if self._relist_reason is None:
            self._relist_reason = reason
        self._abort_stream()

    def _abort_stream(self) -> None:
        with self._stream_lock:
            if self._stream is not None:
                self._stream.close()

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        """The watch loop; returns only after ``stop``. Tests call it inline."""
        if self._start_after is not None:
            while not self._start_after.wait(0.1):
                if self._stop.is_set():
                    return
        while not self._stop.is_set():
            if self._relist_reason is not None:
                if not self._try(self._relist_now, "list"):
                    self.lists_failed_in_a_row += 1
                    continue
                self.lists_failed_in_a_row = 0
            self._try(self._watch_and_pace, "watch")

    def _try(self, step: Callable[[], None], what: str) -> bool:
        """Run one step of the loop; every failure ends in a restart, never in a dead
        thread. Returns whether the step succeeded."""
        try:
            step()
            return True
        except Gone:
            self._restart("gone")
            if self._relist_reason is None:
                self._relist_reason = "gone"
            self._pause()  # a server that answers 410 at once, again and again
        except KubeError as exc:
            if self._stop.is_set():
                return False
            if what == "watch" and self._relist_reason is not None:
                return False  # we aborted the stream ourselves to relist
            self._restart(f"{what}_error")
            _log.warning(f"{what} failed; retrying", extra={"fields": {
                "resource": self.kind, "error": str(exc),
                "resource_version": self.cursor.resource_version}})
            self._pause()
        except Exception:
            if self._stop.is_set():
                return False
            self._restart("crash")
            _log.exception(f"{what} failed unexpectedly; retrying", extra={"fields": {
                "resource": self.kind}})
            self._pause()
        return False

    def _relist_now(self) -> None:
        assert self._relist_reason is not None
        self._relist(self._relist_reason)

    def _watch_and_pace(self) -> None:
        started = time.monotonic()
        delivered = self._watch_once()
        if delivered or time.monotonic() - started >= self._healthy_after:
            self._backoff.reset()
        elif not self._stop.is_set() and self._relist_reason is None:
            self._pause()  # a stream that ends at once, again and again, must not spin

    def _relist(self, reason: str) -> None:
        listing = self._api.list_objects(self.kind)
        repairs = self._sink.replace(listing.items)
        self.cursor = WatchCursor(listing.resource_version)
        self._relist_reason = None
        if reason != INITIAL:
            self._on_relisted(self.kind, reason, repairs)
        if not self.synced.is_set():
            self.synced.set()
            self._on_synced()
        _log.info("listed", extra={"fields": {"resource": self.kind, "reason": reason,
                                               "objects": len(listing.items),
                                               "resource_version": listing.resource_version,
                                               **{k: v for k, v in repairs.items() if v}}})

    def _watch_once(self) -> bool:
        """One watch connection until it ends; returns whether it delivered anything."""
        stream = self._api.watch_objects(self.kind, self.cursor.resource_version,
                                         self._timeout)
        with self._stream_lock:
            self._stream = stream
        delivered = False
        try:
            if self._stop.is_set() or self._relist_reason is not None:
                return False
            lines = LineBuffer()
            for chunk in stream.chunks():
                for line in lines.feed(chunk):
                    self._handle(line)
                    delivered = True
                if self._stop.is_set() or self._relist_reason is not None:
                    break
            return delivered
        finally:
            with self._stream_lock:
                self._stream = None
            stream.close()

    def _handle(self, line: bytes) -> None:
        step = self.cursor.interpret(line)
        if step.kind is StepKind.APPLY:
            try:
                self._sink.apply(step.event_type, step.obj)
                self.events_applied += 1
            except Exception:
                # One bad object must not stop the watch; the next relist repairs it.
                self.events_failed += 1
                _log.exception("watch event not applied", extra={"fields": {
                    "resource": self.kind, "event": step.event_type}})
        elif step.kind is StepKind.SKIP:
            _log.debug("unknown watch event skipped", extra={"fields": {
                "resource": self.kind, "event": step.event_type}})

    def _restart(self, reason: str) -> None:
        self._on_restart(self.kind, reason)

    def _pause(self) -> None:
        self._stop.wait(self._backoff.next_delay())
