"""The event queue: off the bind path, bounded (drops counted, never blocks), aggregated like
kube's EventBroadcaster (same pod + type + reason within the window: one event, a count)."""

from __future__ import annotations

import logging
import threading

import pytest

from extender.apiserver.binder import Binder
from extender.apiserver.errors import KubeError
from extender.apiserver.events import EventQueue, PendingEvent
from extender.model import PodKey
from tests.sync.fake_api import FakeApiServer

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
        queue.write([event(pods[name], reason) for name, reason in batch])
    assert [(e["pod"], e["reason"], e["count"]) for e in api.events] == expected
    assert queue.aggregated == sum(len(b) for b in batches) - len(expected)


def test_after_the_window_a_new_event_starts() -> None:
    api, clock = FakeApiServer(), Clock()
    queue = EventQueue(api, window_s=600, clock=clock)
    queue.write([event(POD, "GpuBindFailed", "first")])
    clock.now += 601  # 601 s > the 600 s window
    queue.write([event(POD, "GpuBindFailed", "second")])
    assert [(e["message"], e["count"]) for e in api.events] == [("first", 1), ("second", 1)]


def test_an_update_of_a_vanished_event_creates_a_new_one() -> None:
    api = FakeApiServer()
    queue = EventQueue(api, clock=Clock())
    queue.write([event(POD, "GpuBindFailed")])
    api.events.clear()  # the API server expired it (events have a TTL)
    queue.write([event(POD, "GpuBindFailed", "again")])
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
        queue.write([event(POD, "GpuAssigned"),
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

    queue.write([PendingEvent(POD, "GpuAssigned", "Normal", compose, write=False),
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
