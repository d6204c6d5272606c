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
- **Paced while binds come** (``EventPacing``, ``service.eventQPS`` / ``service.eventBurst``):
  Normal events are written through a token bucket, as kubelet paces its own
  (``eventRecordQPS`` / ``eventBurst``), so that a burst of placements does not add one API
  write per pod to the burst (issue 22: the event was 12-17 % of the whole pipeline's CPU per
  pod on a loaded control plane). What the bucket holds back waits **composed** (the text, a
  few hundred bytes: the snapshot the explanation reads is let go at once) in a bounded
  backlog, and is written as soon as no placement event has arrived for ``idle_s`` (the
  burst is over) or the bucket refills. Warning events (a failed bind) are never held back.
- **Gathered while binds come**: a placement event that follows another within ``idle_s``
  lets the writer wait ``gather_s`` before it composes, so that one wake-up composes the
  several events of a burst that arrive meanwhile instead of one per bind. On a shared VM a
  thread that wakes after a wait of a few milliseconds runs its first stretch at 2-3 x the CPU
  of the same code in a tight loop (``benchmarks/bench_idle_tax.py``): per placement, the
  writer's wake-up was that tax. A lone placement is composed at once; in a burst, the events
  the bucket lets through are written at most ``gather_s`` later than before (the rest wait
  for the bucket anyway), and ``stop`` cuts the wait short.
- **Owned**: the service starts the writer and stops it; ``stop`` writes what is queued and
  held back (within a deadline, ignoring the pace), then ends the thread.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class EventPacing:
    """The token bucket Normal events are written through while placements keep coming."""

    qps: float
    """Tokens per second (``service.eventQPS``); 0: no pacing at all."""
    burst: int
    """The bucket's size: written at once after a quiet spell (``service.eventBurst``)."""
    idle_s: float = 1.0
    """No placement event for this long: the burst is over, the backlog is written at once."""
    backlog: int = 16384
    """Composed events held back at most (~0.5 KiB each); beyond, dropped and counted."""
    gather_s: float = 0.05
    """How long the writer waits for more of a burst's placement events before composing
    (a placement event within ``idle_s`` of the one before it); 0: never."""


@dataclass
class _Ready:
    event: PendingEvent
    text: str
    count: int
    """Submitted events this one stands for (folded: same pod, type and reason)."""
    taken_in: int
    """The writer's step that composed it (written in a later one: it was held back)."""


UNPACED = EventPacing(qps=0.0, burst=1)
"""Every event written as soon as it is composed (tests, the demand controller)."""
NORMAL = "Normal"

DEFAULT_CAPACITY = 4096
POLL_S = 0.2
"""The writer's longest wait for a new event (how soon it sees ``stop``)."""
DEFAULT_WINDOW_S = 600.0
"""kube's EventCorrelator aggregates within 10 minutes (``maxIntervalInSeconds``)."""


class EventQueue:
    def __init__(self, writer: EventWriter, *, capacity: int = DEFAULT_CAPACITY,
                 window_s: float = DEFAULT_WINDOW_S, batch: int = 64,
                 remembered: int = 4096, pacing: EventPacing = UNPACED,
                 clock: Callable[[], float] = time.monotonic) -> None:
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
        self._pacing = pacing
        self._ready: OrderedDict[_Key, _Ready] = OrderedDict()
        """Composed Normal events waiting for the pace (the writer thread's own)."""
        self._urgent: OrderedDict[_Key, _Ready] = OrderedDict()
        """Composed Warning events of this batch: written before any held-back one."""
        self._steps = 0
        """The writer's steps so far (``pump``s)."""
        self._tokens = float(pacing.burst)
        self._refilled = clock()
        self._last_placement = -math.inf
        """When the last Normal event was submitted (bind threads write, the writer reads)."""
        self._placement_gap = math.inf
        """The time between the last two Normal events submitted (a burst: under
        ``idle_s``)."""
        self.gathered = 0
        """Writer wake-ups that waited ``gather_s`` for more of a burst's events."""
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
        self.deferred = 0
        """Normal events the pace held back: written in a later step than the one that
        composed them (after the burst, or as the bucket refilled)."""

    # -- the bind side -----------------------------------------------------------------------

    def submit(self, event: PendingEvent) -> bool:
        """Queue ``event``; ``False`` (and counted) if the queue is full. Never blocks."""
        if event.event_type == NORMAL:
            now = self._clock()
            self._placement_gap = now - self._last_placement
            self._last_placement = now
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
        if thread.is_alive():
            _log.warning("events not written before shutdown", extra={"fields": {
                "queued": self._queue.qsize(), "held_back": len(self._ready),
                "waited_s": timeout_s}})

    @property
    def pending(self) -> int:
        """Events submitted and not yet written, dropped or failed (queued or held back)."""
        return self._queue.unfinished_tasks

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until everything submitted so far is written (tests, shutdown)."""
        deadline = self._clock() + timeout_s
        while self.pending:
            if self._clock() > deadline:
                return False
            time.sleep(0.005)
        return True

    # -- the writer thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            stopping = self._stopping.is_set()
            wait = self._wait_s()
            try:
                first = self._queue.get(timeout=min(wait, POLL_S)) if wait > 0 \
                    else self._queue.get_nowait()
            except queue.Empty:
                first = None
            if first is not None:
                if not stopping and self._gathers(first):
                    self.gathered += 1
                    self._stopping.wait(self._pacing.gather_s)  # stop cuts it short
                self._take([first])
            self.pump(force=stopping)
            if stopping and first is None and not self._ready and not self._urgent:
                return

    def _gathers(self, first: PendingEvent) -> bool:
        """Whether to wait for more events before composing ``first``: a placement event of
        a burst (one that came within ``idle_s`` of the one before), under a pace."""
        pacing = self._pacing
        return pacing.qps > 0 and pacing.gather_s > 0 and first.event_type == NORMAL and \
            self._placement_gap < pacing.idle_s

    def pump(self, *, force: bool = False) -> None:
        """One step of the writer: compose what is queued and write what the pace allows
        (everything with ``force``). The writer thread's; tests call it on a queue they did
        not start."""
        while True:
            batch: list[PendingEvent] = []
            while len(batch) < self._batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._take(batch)
            self._write_ready(force=force)
            if len(batch) < self._batch:
                self._steps += 1
                return

    def _take(self, batch: list[PendingEvent]) -> None:
        """Compose ``batch`` and fold it into what waits to be written (Normal events held
        back by the pace, the rest written right after)."""
        for event in batch:
            try:
                text = _compose(event)
                if text is None or not event.write:
                    if text is not None:
                        self.unwritten += 1
                    self._queue.task_done()
                    continue
                key = _key_of(event)
                # kept with its text, not with what composed it: a callable holds the bind's
                # cycle and the snapshot it was scored on (megabytes at 1,000 nodes)
                composed = replace(event, message=text)
                waiting = self._ready if event.event_type == NORMAL else self._urgent
                ready = waiting.get(key)
                if ready is not None:
                    self.aggregated += 1
                    ready.event, ready.text, ready.count = composed, text, ready.count + 1
                elif waiting is self._ready and len(waiting) >= self._pacing.backlog:
                    with self._dropped_lock:
                        self.dropped += 1
                    self._queue.task_done()
                else:
                    waiting[key] = _Ready(composed, text, 1, self._steps)
            except Exception:  # a bug here must not lose the rest of the batch
                self.failed += 1
                self._queue.task_done()
                _log.exception("event writer failed")

    def _write_ready(self, *, force: bool) -> None:
        """Write the Warning events, then the Normal ones in arrival order while the pace
        allows (all of them when ``force``, after a burst, or with no pacing)."""
        while self._urgent:
            self._write_ready_one(*self._urgent.popitem(last=False))
        while self._ready:
            key, ready = next(iter(self._ready.items()))
            if not force and not self._may_write():
                return
            del self._ready[key]
            self._write_ready_one(key, ready)

    def _write_ready_one(self, key: _Key, ready: _Ready) -> None:
        if ready.taken_in != self._steps:
            self.deferred += ready.count
        try:
            self._write_one(key, ready.event, ready.text, ready.count)
        except Exception:  # a bug in a writer must not end the thread (events would pile up)
            self.failed += ready.count
            _log.exception("event writer failed")
        finally:
            for _ in range(ready.count):
                self._queue.task_done()

    def _may_write(self) -> bool:
        """Take a token if there is one; ``True`` without one once the burst is over."""
        pacing = self._pacing
        if pacing.qps <= 0:
            return True
        now = self._clock()
        if now - self._last_placement >= pacing.idle_s:
            return True
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def _refill(self, now: float) -> None:
        pacing = self._pacing
        self._tokens = min(float(pacing.burst),
                           self._tokens + (now - self._refilled) * pacing.qps)
        self._refilled = now

    def _wait_s(self) -> float:
        """How long the writer may wait for new events: its usual poll when nothing waits to
        be written, else until a token or the end of the burst."""
        if not self._ready:
            return POLL_S
        pacing = self._pacing
        if pacing.qps <= 0:
            return 0.0
        now = self._clock()
        self._refill(now)
        until_idle = pacing.idle_s - (now - self._last_placement)
        until_token = (1.0 - self._tokens) / pacing.qps
        return max(0.0, min(until_idle, until_token))

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


def _key_of(event: PendingEvent) -> _Key:
    """What folds two events into one (kube's EventCorrelator: pod, type and reason)."""
    return (event.pod.namespace, event.pod.name, event.pod.uid, event.event_type, event.reason)


def _compose(event: PendingEvent) -> str | None:
    if isinstance(event.message, str):
        return event.message
    try:
        return event.message()
    except Exception:  # composing is the caller's code; an event must never stop the writer
        _log.exception("could not compose event", extra={"fields": {
            "pod": str(event.pod), "reason": event.reason}})
        return None
