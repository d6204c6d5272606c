"""Events off the bind path: a bounded queue, drained by one writer thread, aggregated.

A bind used to write its Normal event (and compute the explanation in it) before answering
kube-scheduler: one more API round trip and a few hundred microseconds of Python per pod on
the bind path, competing for the GIL with the next pods' filter and prioritize (issue 22).
Now a bind only ``submit``s; the message may be a callable, composed in the writer thread (the
explanation is computed there).

- **Bounded, never blocking**: ``submit`` on a full queue drops the event and counts it
  (``dropped``, the ``gpu_extender_events_dropped`` metric); a bind never waits for an event.
- **Aggregated like kube's EventBroadcaster** (``EventCorrelator``): events with the same
  pod, type and reason within ``window_s`` of the last one become one event whose ``count``
  grows (a merge patch of ``count``, ``lastTimestamp`` and ``message``); what is queued at
  once is folded before it is written.
- **Owned**: the service starts the writer and stops it; ``stop`` writes what is queued
  (within a deadline), then ends the thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from extender.apiserver.errors import KubeError, NotFound
from extender.model import PodKey

_log = logging.getLogger(__name__)

Message = str | Callable[[], str]
"""An event's text, or what composes it (called once, in the writer thread)."""


class EventWriter(Protocol):
    """What the writer needs from the API; raises ``KubeError``."""

    def create_event(self, pod: PodKey, *, reason: str, message: str, event_type: str,
                     count: int) -> str:
        """Create the event; its name (for later updates)."""

    def update_event(self, pod: PodKey, name: str, *, message: str, count: int) -> None:
        """Raise the count of an event created earlier, with the latest message."""


@dataclass(frozen=True)
class PendingEvent:
    pod: PodKey
    reason: str
    event_type: str
    message: Message
    write: bool = True
    """``False``: compose the message (its side effects: the log line, the explain record)
    but write nothing (``service.placementEvents`` off)."""


@dataclass
class _Written:
    name: str
    count: int
    at: float


_Key = tuple[str, str, str, str, str]

DEFAULT_CAPACITY = 4096
DEFAULT_WINDOW_S = 600.0
"""kube's EventCorrelator aggregates within 10 minutes (``maxIntervalInSeconds``)."""


class EventQueue:
    def __init__(self, writer: EventWriter, *, capacity: int = DEFAULT_CAPACITY,
                 window_s: float = DEFAULT_WINDOW_S, batch: int = 64,
                 remembered: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self._writer = writer
        self._queue: queue.Queue[PendingEvent] = queue.Queue(maxsize=capacity)
        self._window = window_s
        self._batch = batch
        self._remembered = remembered
        self._clock = clock
        self._recent: OrderedDict[_Key, _Written] = OrderedDict()
        self._stopping = threading.Event()
        self._dropped_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.dropped = 0
        """Events refused because the queue was full."""
        self.written = 0
        """API writes (creates and updates)."""
        self.aggregated = 0
        """Events folded into another one of the same pod and reason."""
        self.failed = 0
        """Writes the API refused (logged)."""
        self.unwritten = 0
        """Events composed and not written, as asked (``PendingEvent.write``)."""

    # -- the bind side -----------------------------------------------------------------------

    def submit(self, event: PendingEvent) -> bool:
        """Queue ``event``; ``False`` (and counted) if the queue is full. Never blocks."""
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            with self._dropped_lock:  # binds run on several threads
                self.dropped += 1
            return False
        return True

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="event-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Write what is queued (for up to ``timeout_s``), then end the writer."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping.set()
        thread.join(timeout_s)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until everything submitted so far is written (tests, shutdown)."""
        deadline = self._clock() + timeout_s
        while self._queue.unfinished_tasks:
            if self._clock() > deadline:
                return False
            time.sleep(0.005)
        return True

    # -- the writer thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=0.2)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            batch = [first]
            while len(batch) < self._batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self.write(batch)
            except Exception:  # a bug in a writer must not end the thread (events would pile up)
                self.failed += len(batch)
                _log.exception("event writer failed")
            finally:
                for _ in batch:
                    self._queue.task_done()

    def write(self, batch: list[PendingEvent]) -> None:
        """Compose, fold and write ``batch`` (the writer thread's step; never raises)."""
        folded: OrderedDict[_Key, tuple[PendingEvent, str, int]] = OrderedDict()
        for event in batch:
            text = _compose(event)
            if text is None:
                continue
            if not event.write:
                self.unwritten += 1
                continue
            key = (event.pod.namespace, event.pod.name, event.pod.uid, event.event_type,
                   event.reason)
            seen = folded.get(key)
            if seen is not None:
                self.aggregated += 1
            folded[key] = (event, text, (seen[2] if seen else 0) + 1)
        for key, (event, text, count) in folded.items():
            self._write_one(key, event, text, count)

    def _write_one(self, key: _Key, event: PendingEvent, text: str, count: int) -> None:
        now = self._clock()
        recent = self._recent.get(key)
        try:
            if recent is not None and now - recent.at <= self._window:
                try:
                    self._writer.update_event(event.pod, recent.name, message=text,
                                              count=recent.count + count)
                    self.aggregated += count
                    self._remember(key, _Written(recent.name, recent.count + count, now))
                    self.written += 1
                    return
                except NotFound:
                    pass  # the event expired (or was deleted): start a new one
            name = self._writer.create_event(event.pod, reason=event.reason, message=text,
                                             event_type=event.event_type, count=count)
            self.written += 1
            self._remember(key, _Written(name, count, now))
        except KubeError as exc:
            self.failed += 1
            _log.warning("could not record event", extra={"fields": {
                "pod": str(event.pod), "reason": event.reason, "error": str(exc)}})

    def _remember(self, key: _Key, written: _Written) -> None:
        self._recent[key] = written
        self._recent.move_to_end(key)
        while len(self._recent) > self._remembered:
            self._recent.popitem(last=False)


def _compose(event: PendingEvent) -> str | None:
    if isinstance(event.message, str):
        return event.message
    try:
        return event.message()
    except Exception:  # composing is the caller's code; an event must never stop the writer
        _log.exception("could not compose event", extra={"fields": {
            "pod": str(event.pod), "reason": event.reason}})
        return None
