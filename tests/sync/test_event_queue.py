"""The event queue: off the bind path, bounded (drops counted, never blocks), aggregated like
kube's EventBroadcaster (same pod + type + reason within the window: one event, a count)."""

from __future__ import annotations

import gc
import logging
import threading
import time
import weakref

import pytest

from extender.apiserver.binder import Binder
from extender.apiserver.errors import KubeError
from extender.apiserver.events import UNPACED, EventPacing, EventQueue, PendingEvent
from extender.model import PodKey
from tests.sync.fake_api import FakeApiServer
from tests.waiting import eventually

POD = PodKey("ml", "train", "uid-1")
OTHER = PodKey("ml", "serve", "uid-2")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def event(pod: PodKey, reason: str, message: str = "m",
          event_type: str = "Normal") -> PendingEvent:
    return PendingEvent(pod, reason, event_type, message)


def write(queue: EventQueue, batch: list[PendingEvent]) -> None:
    """What the writer thread does with ``batch`` queued at once."""
    for pending in batch:
        assert queue.submit(pending)
    queue.pump(force=True)


@pytest.mark.parametrize(("batches", "expected"), [
    # one event per pod and reason: nothing to fold
    ([[("train", "GpuAssigned")], [("serve", "GpuAssigned")]],
     [("ml/train", "GpuAssigned", 1), ("ml/serve", "GpuAssigned", 1)]),
    # three failures of one pod queued together: one event, count 3
    ([[("train", "GpuBindFailed")] * 3], [("ml/train", "GpuBindFailed", 3)]),
    # 2 then 1 within the window: the first event's count goes 2 -> 2 + 1 = 3
    ([[("train", "GpuBindFailed")] * 2, [("train", "GpuBindFailed")]],
     [("ml/train", "GpuBindFailed", 3)]),
    # same pod, two reasons: two events
    ([[("train", "GpuBindFailed"), ("train", "GpuAssigned")]],
     [("ml/train", "GpuBindFailed", 1), ("ml/train", "GpuAssigned", 1)]),
])
def test_same_pod_and_reason_within_the_window_is_one_event_with_a_count(
        batches: list[list[tuple[str, str]]], expected: list[tuple[str, str, int]]) -> None:
    api = FakeApiServer()
    pods = {"train": POD, "serve": OTHER}
    queue = EventQueue(api, clock=Clock())
    for batch in batches:
        write(queue, [event(pods[name], reason) for name, reason in batch])
    assert [(e["pod"], e["reason"], e["count"]) for e in api.events] == expected
    assert queue.aggregated == sum(len(b) for b in batches) - len(expected)


def test_after_the_window_a_new_event_starts() -> None:
    api, clock = FakeApiServer(), Clock()
    queue = EventQueue(api, window_s=600, clock=clock)
    write(queue, [event(POD, "GpuBindFailed", "first")])
    clock.now += 601  # 601 s > the 600 s window
    write(queue, [event(POD, "GpuBindFailed", "second")])
    assert [(e["message"], e["count"]) for e in api.events] == [("first", 1), ("second", 1)]


def test_an_update_of_a_vanished_event_creates_a_new_one() -> None:
    api = FakeApiServer()
    queue = EventQueue(api, clock=Clock())
    write(queue, [event(POD, "GpuBindFailed")])
    api.events.clear()  # the API server expired it (events have a TTL)
    write(queue, [event(POD, "GpuBindFailed", "again")])
    assert [(e["message"], e["count"]) for e in api.events] == [("again", 1)]


def test_a_full_queue_drops_and_counts_and_never_blocks() -> None:
    api = FakeApiServer()
    queue = EventQueue(api, capacity=2)  # not started: nothing drains it
    results = [queue.submit(event(POD, f"R{i}")) for i in range(5)]
    assert results == [True, True, False, False, False]
    assert queue.dropped == 3 and api.events == []


def test_the_writer_composes_messages_in_its_own_thread_and_stop_writes_the_rest() -> None:
    api = FakeApiServer()
    queue = EventQueue(api)
    threads: list[str] = []

    def compose() -> str:
        threads.append(threading.current_thread().name)
        return "assigned GPU 0"

    queue.start()
    assert queue.submit(PendingEvent(POD, "GpuAssigned", "Normal", compose))
    assert queue.submit(event(OTHER, "GpuAssigned"))
    queue.stop()
    assert threads == ["event-writer"]
    assert [(e["pod"], e["message"]) for e in api.events] == [
        ("ml/train", "assigned GPU 0"), ("ml/serve", "m")]
    assert queue.written == 2


def test_a_failed_write_or_compose_is_logged_and_the_writer_goes_on(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApiServer()
    queue = EventQueue(api)
    refused = {"ml/train"}
    create = api.create_event

    def create_or_refuse(pod: PodKey, **kwargs: object) -> str:
        if str(pod) in refused:
            raise KubeError("events is forbidden", status=403)
        return create(pod, **kwargs)  # type: ignore[arg-type]

    def broken() -> str:
        raise ValueError("no breakdown")

    monkeypatch.setattr(api, "create_event", create_or_refuse)
    with caplog.at_level(logging.WARNING):
        write(queue, [event(POD, "GpuAssigned"),
                     PendingEvent(OTHER, "GpuBindFailed", "Warning", broken),
                     event(OTHER, "GpuAssigned", "ok")])
    assert [(e["pod"], e["message"]) for e in api.events] == [("ml/serve", "ok")]
    assert queue.failed == 1
    messages = [r.getMessage() for r in caplog.records]
    assert "could not record event" in messages and "could not compose event" in messages


def test_an_unexpected_error_in_the_writer_does_not_end_its_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApiServer()
    queue = EventQueue(api)
    create = api.create_event
    calls = []

    def fail_once(pod: PodKey, **kwargs: object) -> str:
        calls.append(pod)
        if len(calls) == 1:
            raise RuntimeError("a bug")
        return create(pod, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "create_event", fail_once)
    queue.start()
    queue.submit(event(POD, "GpuAssigned"))
    assert queue.flush()
    queue.submit(event(OTHER, "GpuAssigned"))
    assert queue.flush()
    queue.stop()
    assert [e["pod"] for e in api.events] == ["ml/serve"]
    assert queue.failed == 1


def test_an_event_not_to_write_is_composed_and_counted_never_written() -> None:
    # service.placementEvents off: the message's side effects (the "pod placed" log line,
    # the explain record) still happen in the writer; the API gets no object
    api = FakeApiServer()
    queue = EventQueue(api)
    composed: list[str] = []

    def compose() -> str:
        composed.append("ml/train")
        return "assigned GPU 0"

    write(queue, [PendingEvent(POD, "GpuAssigned", "Normal", compose, write=False),
                 event(OTHER, "GpuBindFailed", event_type="Warning")])
    assert composed == ["ml/train"]
    assert [(e["pod"], e["reason"]) for e in api.events] == [("ml/serve", "GpuBindFailed")]
    assert (queue.unwritten, queue.written) == (1, 1)


@pytest.mark.parametrize("placement_events", [True, False])
def test_the_binder_writes_placement_events_only_when_asked_and_warnings_always(
        placement_events: bool) -> None:
    api = FakeApiServer()
    binder = Binder(api, placement_events=placement_events)  # offline: written inline
    composed: list[str] = []

    def compose() -> str:
        composed.append("assigned")
        return "assigned GPU 0"

    binder.notify(POD, "GpuAssigned", compose)
    binder.warn(OTHER, "GpuBindFailed", "node gone")
    assert composed == ["assigned"]
    written = [(e["pod"], e["reason"]) for e in api.events]
    assert written == [("ml/train", "GpuAssigned"), ("ml/serve", "GpuBindFailed")][
        0 if placement_events else 1:]


# -- the pace (service.eventQPS / eventBurst): a burst of placements is not also a burst of
# -- API writes; what is held back waits composed and is written once the burst is over

def placed(i: int) -> PendingEvent:
    return event(PodKey("ml", f"p{i}", f"uid-p{i}"), "GpuAssigned", f"assigned {i}")


def test_a_burst_writes_the_bucket_then_one_event_per_token_then_the_rest_once_quiet() -> None:
    api, clock = FakeApiServer(), Clock()
    queue = EventQueue(api, pacing=EventPacing(qps=2.0, burst=3, idle_s=1.0), clock=clock)
    for i in range(6):  # six binds at t = 1000.0
        queue.submit(placed(i))
    queue.pump()
    assert [e["message"] for e in api.events] == ["assigned 0", "assigned 1", "assigned 2"]
    assert queue.pending == 3  # the bucket held 3 tokens; 3 wait
    clock.now += 0.25  # 0.25 s x 2/s = 0.5 token: nothing yet
    queue.pump()
    assert len(api.events) == 3
    clock.now += 0.25  # 0.5 s x 2/s = 1 token: one more
    queue.submit(placed(6))  # a bind still comes: the burst goes on
    queue.pump()
    assert [e["message"] for e in api.events][3:] == ["assigned 3"]
    clock.now += 0.99  # 0.99 s since the last bind: still the burst, 1.98 tokens: one more
    queue.pump()
    assert [e["message"] for e in api.events][4:] == ["assigned 4"]
    clock.now += 0.01  # 1 s without a bind: the burst is over, the rest is written at once
    queue.pump()
    assert [e["message"] for e in api.events][5:] == ["assigned 5", "assigned 6"]
    assert (queue.written, queue.deferred, queue.dropped) == (7, 4, 0)
    assert queue.pending == 0


def test_a_warning_is_never_held_back_behind_placements() -> None:
    api, clock = FakeApiServer(), Clock()
    queue = EventQueue(api, pacing=EventPacing(qps=1.0, burst=1, idle_s=60.0), clock=clock)
    queue.submit(placed(0))
    queue.submit(placed(1))
    queue.submit(event(OTHER, "GpuBindFailed", "node gone", event_type="Warning"))
    queue.pump()
    assert [e["message"] for e in api.events] == ["node gone", "assigned 0"]
    assert queue.pending == 1  # "assigned 1" waits


def test_held_back_events_fold_and_beyond_the_backlog_are_dropped_and_counted() -> None:
    api, clock = FakeApiServer(), Clock()
    queue = EventQueue(api, pacing=EventPacing(qps=1.0, burst=1, idle_s=1.0, backlog=3),
                       clock=clock)
    for pending in (placed(0), placed(1), placed(2), placed(1), placed(3)):
        queue.submit(pending)
    # p0, p1, p2 composed (the backlog holds 3), p1 again folds, p3 dropped; p0 written
    queue.pump()
    assert (queue.written, queue.aggregated, queue.dropped) == (1, 1, 1)
    clock.now += 1.0
    queue.pump()
    assert [(e["pod"], e["count"]) for e in api.events] == [
        ("ml/p0", 1), ("ml/p1", 2), ("ml/p2", 1)]
    assert queue.pending == 0  # nothing submitted is left unaccounted


def test_stop_writes_what_the_pace_holds_back() -> None:
    api = FakeApiServer()
    queue = EventQueue(api, pacing=EventPacing(qps=0.001, burst=1, idle_s=3600.0))
    queue.start()
    for i in range(5):
        queue.submit(placed(i))
    queue.stop()
    assert sorted(e["message"] for e in api.events) == [f"assigned {i}" for i in range(5)]


def test_without_pacing_every_event_is_written_as_it_comes() -> None:
    api = FakeApiServer()
    queue = EventQueue(api, pacing=UNPACED)
    for i in range(200):
        queue.submit(placed(i))
    queue.pump()
    assert (len(api.events), queue.deferred) == (200, 0)


def test_a_held_back_event_keeps_its_text_not_what_composed_it() -> None:
    # the message callable holds the bind's cycle and snapshot: a backlog of them would keep
    # a snapshot per pod alive for the whole burst
    class Snapshot:  # stands for what the explanation reads
        pass

    api, clock = FakeApiServer(), Clock()
    queue = EventQueue(api, pacing=EventPacing(qps=1.0, burst=1, idle_s=1.0), clock=clock)
    queue.submit(placed(0))  # takes the only token
    snapshot = Snapshot()
    seen = weakref.ref(snapshot)

    def compose(read: Snapshot = snapshot) -> str:
        return f"assigned 1 ({type(read).__name__})"

    queue.submit(PendingEvent(PodKey("ml", "p1", "uid-p1"), "GpuAssigned", "Normal", compose))
    del snapshot, compose
    queue.pump()
    assert queue.pending == 1  # held back, composed
    gc.collect()
    assert seen() is None
    clock.now += 1.0
    queue.pump()
    assert [e["message"] for e in api.events] == ["assigned 0", "assigned 1 (Snapshot)"]


def test_a_burst_s_placement_events_are_gathered_into_one_wake_up_and_a_lone_one_is_not(
        ) -> None:
    api = FakeApiServer()
    gather_s = 1.0  # the three submits below come well within it, even on a loaded machine
    queue = EventQueue(api, pacing=EventPacing(qps=1000.0, burst=100, idle_s=60.0,
                                               gather_s=gather_s))
    composed: dict[int, float] = {}

    def placement(i: int) -> PendingEvent:
        def compose() -> str:
            composed[i] = time.monotonic()
            return f"assigned {i}"
        return PendingEvent(PodKey("ml", f"p{i}", f"uid-p{i}"), "GpuAssigned", "Normal",
                            compose)

    queue.start()
    try:
        queue.submit(placement(0))  # the first placement: no burst, composed at once
        eventually(lambda: queue.written == 1, timeout=10.0)
        assert queue.gathered == 0
        # within idle_s (60 s) of the one before: a burst; the writer waits gather_s, then
        # composes the three in the same wake-up
        submitted = time.monotonic()
        for i in (1, 2, 3):
            queue.submit(placement(i))
        assert queue.flush()
    finally:
        queue.stop()
    assert queue.gathered == 1
    assert composed[1] - submitted >= gather_s * 0.99  # Event.wait never returns early
    assert sorted(e["message"] for e in api.events) == [f"assigned {i}" for i in range(4)]


def test_no_pace_no_gather_and_stop_cuts_a_gather_short() -> None:
    api = FakeApiServer()
    unpaced = EventQueue(api, pacing=UNPACED)
    unpaced.start()
    for i in range(3):
        unpaced.submit(placed(i))
    assert unpaced.flush()
    unpaced.stop()
    assert (unpaced.gathered, unpaced.written) == (0, 3)
    # a gather of an hour: stop writes at once what it gathered
    queue = EventQueue(api, pacing=EventPacing(qps=1000.0, burst=100, idle_s=60.0,
                                               gather_s=3600.0))
    queue.start()
    queue.submit(placed(3))
    queue.submit(placed(4))
    eventually(lambda: queue.gathered == 1, timeout=10.0)
    started = time.monotonic()
    queue.stop(timeout_s=30.0)
    assert time.monotonic() - started < 10.0
    assert queue.written == 2
