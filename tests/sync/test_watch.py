"""The list/watch loop against scripted streams: events, bookmarks, 410, dropped connections,
relists on request, and stop."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from extender.apiserver.client import ObjectList, ResourceKind
from extender.apiserver.errors import KubeError, Unavailable
from extender.sync.watch import Backoff, ResourceSink, ResourceWatcher

Script = list[bytes | Exception]


def node(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}}


def event(event_type: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


def gone() -> bytes:
    return event("ERROR", {"kind": "Status", "code": 410, "reason": "Expired",
                           "message": "too old resource version"})


class ScriptedStream:
    def __init__(self, script: Script) -> None:
        self._script = script
        self.closed = False

    def chunks(self) -> Iterator[bytes]:
        for item in self._script:
            if isinstance(item, Exception):
                raise item
            yield item

    def close(self) -> None:
        self.closed = True


class ScriptedLister:
    """Each ``list_objects`` returns the next list; each ``watch_objects`` the next script.
    When the scripts run out the watcher is stopped (so ``run`` returns)."""

    def __init__(self, lists: list[ObjectList | Exception], watches: list[Script]) -> None:
        self.lists = list(lists)
        self.watches = list(watches)
        self.watched_from: list[str] = []
        self.list_calls = 0
        self.watcher: ResourceWatcher | None = None

    def list_objects(self, kind: ResourceKind) -> ObjectList:
        self.list_calls += 1
        item = self.lists.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def watch_objects(self, kind: ResourceKind, resource_version: str,
                      timeout_seconds: int) -> ScriptedStream | BlockingStream:
        self.watched_from.append(resource_version)
        if not self.watches:
            assert self.watcher is not None
            self.watcher.stop()
            return ScriptedStream([])
        return ScriptedStream(self.watches.pop(0))


class RecordingSink:
    def __init__(self, fail_on: str = "") -> None:
        self.events: list[tuple[str, str]] = []
        self.replaced: list[list[str]] = []
        self._fail_on = fail_on

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name == self._fail_on:
            raise ValueError("cannot decode")
        self.events.append((event_type, name))

    def replace(self, items: list[dict[str, Any]]) -> dict[str, int]:
        self.replaced.append([i["metadata"]["name"] for i in items])
        return {"nodes_added": 1, "nodes_removed": 0}

    def as_sink(self) -> ResourceSink:
        return ResourceSink(self.apply, self.replace)


def make_watcher(lister: ScriptedLister, sink: RecordingSink,
                 **kwargs: Any) -> tuple[ResourceWatcher, list[tuple[str, str]],
                                         list[tuple[str, str, dict[str, int]]]]:
    restarts: list[tuple[str, str]] = []
    relists: list[tuple[str, str, dict[str, int]]] = []
    watcher = ResourceWatcher(
        "nodes", lister, sink.as_sink(), backoff=Backoff(0.0, 0.0),
        on_restart=lambda kind, reason: restarts.append((kind, reason)),
        on_relisted=lambda kind, reason, repairs: relists.append((kind, reason, repairs)),
        **kwargs)
    lister.watcher = watcher
    return watcher, restarts, relists


def test_lists_then_watches_from_the_list_version_and_applies_in_order() -> None:
    lister = ScriptedLister([ObjectList([node("n1", "10")], "10")], [
        [event("ADDED", node("n2", "11")), event("MODIFIED", node("n1", "12")),
         event("DELETED", node("n2", "13"))],
    ])
    sink = RecordingSink()
    watcher, restarts, relists = make_watcher(lister, sink)
    watcher.run()
    assert sink.replaced == [["n1"]]
    assert sink.events == [("ADDED", "n2"), ("MODIFIED", "n1"), ("DELETED", "n2")]
    # the server ended the stream: reconnect from the last event, no relist
    assert lister.watched_from == ["10", "13"]
    assert watcher.synced.is_set()
    assert restarts == [] and relists == []


def test_reconnects_from_the_last_bookmark() -> None:
    lister = ScriptedLister([ObjectList([], "10")], [
        [event("ADDED", node("n1", "11")), event("BOOKMARK", {"metadata": {
            "resourceVersion": "250"}})],
    ])
    watcher, _, _ = make_watcher(lister, RecordingSink())
    watcher.run()
    assert lister.watched_from == ["10", "250"]


def test_error_410_relists_and_watches_from_the_new_list() -> None:
    lister = ScriptedLister([ObjectList([node("n1", "10")], "10"),
                             ObjectList([node("n1", "10"), node("n3", "500")], "500")],
                            [[event("ADDED", node("n2", "11")), gone()],
                             [event("MODIFIED", node("n3", "501"))]])
    sink = RecordingSink()
    watcher, restarts, relists = make_watcher(lister, sink)
    watcher.run()
    assert sink.replaced == [["n1"], ["n1", "n3"]]
    assert lister.watched_from == ["10", "500", "501"]
    assert restarts == [("nodes", "gone")]
    assert relists == [("nodes", "gone", {"nodes_added": 1, "nodes_removed": 0})]


def test_dropped_connection_reconnects_from_the_last_complete_event() -> None:
    partial = event("MODIFIED", node("n9", "13"))[:20]
    lister = ScriptedLister([ObjectList([], "10")], [
        [event("ADDED", node("n1", "11")) + event("ADDED", node("n2", "12")) + partial,
         Unavailable("watch nodes: ProtocolError: Connection broken")],
        [event("MODIFIED", node("n1", "14"))],
    ])
    sink = RecordingSink()
    watcher, restarts, _ = make_watcher(lister, sink)
    watcher.run()
    assert sink.events == [("ADDED", "n1"), ("ADDED", "n2"), ("MODIFIED", "n1")]
    assert lister.watched_from == ["10", "12", "14"]
    assert lister.list_calls == 1
    assert restarts == [("nodes", "watch_error")]


def test_unknown_events_are_skipped_and_a_bad_object_does_not_stop_the_watch() -> None:
    lister = ScriptedLister([ObjectList([], "10")], [
        [orjson.dumps({"type": "FUTURE", "object": {}}) + b"\n",
         event("ADDED", node("broken", "11")), event("ADDED", node("n1", "12"))],
    ])
    sink = RecordingSink(fail_on="broken")
    watcher, restarts, _ = make_watcher(lister, sink)
    watcher.run()
    assert sink.events == [("ADDED", "n1")]
    assert watcher.events_failed == 1
    assert restarts == []


def test_a_failed_list_is_retried() -> None:
    lister = ScriptedLister([Unavailable("list nodes: connection refused"),
                             ObjectList([node("n1", "5")], "5")], [])
    sink = RecordingSink()
    watcher, restarts, _ = make_watcher(lister, sink)
    watcher.run()
    assert sink.replaced == [["n1"]]
    assert restarts == [("nodes", "list_error")]


def test_a_stream_that_keeps_failing_at_once_backs_off() -> None:
    delays: list[float] = []

    class CountingBackoff(Backoff):
        def next_delay(self) -> float:
            delay = super().next_delay()
            delays.append(delay)
            return 0.0

    lister = ScriptedLister([ObjectList([], "1")],
                            [[KubeError("boom")], [KubeError("boom")], [KubeError("boom")]])
    watcher, restarts, _ = make_watcher(lister, RecordingSink())
    watcher._backoff = CountingBackoff(1.0, 8.0)
    watcher.run()
    assert len(restarts) == 3
    assert [d <= c for d, c in zip(delays, (1.0, 2.0, 4.0), strict=True)] == [True] * 3
    assert delays[2] >= 2.0  # exponential: the third delay is drawn from [2, 4]


class BlockingStream:
    """Delivers one event, then blocks until closed (a quiet, healthy watch)."""

    def __init__(self, first: bytes) -> None:
        self._first = first
        self._closed = threading.Event()

    def chunks(self) -> Iterator[bytes]:
        yield self._first
        self._closed.wait(10)
        raise Unavailable("stream aborted")

    def close(self) -> None:
        self._closed.set()


class BlockingLister(ScriptedLister):
    def __init__(self) -> None:
        super().__init__([ObjectList([node("n1", "1")], "1"),
                          ObjectList([node("n1", "1"), node("n2", "7")], "7")], [])
        self.streaming = threading.Event()

    def watch_objects(self, kind: ResourceKind, resource_version: str,
                      timeout_seconds: int) -> BlockingStream:
        self.watched_from.append(resource_version)
        self.streaming.set()
        return BlockingStream(event("MODIFIED", node("n1", str(int(resource_version) + 1))))


def test_request_relist_aborts_the_stream_and_relists() -> None:
    lister = BlockingLister()
    sink = RecordingSink()
    watcher, restarts, relists = make_watcher(lister, sink)
    watcher.start()
    try:
        assert lister.streaming.wait(5)
        lister.streaming.clear()
        watcher.request_relist()
        assert lister.streaming.wait(5)
    finally:
        watcher.stop()
    assert sink.replaced == [["n1"], ["n1", "n2"]]
    assert relists[0][:2] == ("nodes", "reconcile")
    assert restarts == []
    assert lister.watched_from[:2] == ["1", "7"]


def test_stop_ends_a_blocked_watch_promptly() -> None:
    lister = BlockingLister()
    watcher, _, _ = make_watcher(lister, RecordingSink())
    watcher.start()
    assert lister.streaming.wait(5)
    watcher.stop(timeout=5)
    assert watcher._thread is not None and not watcher._thread.is_alive()


def test_waits_for_its_start_event_and_can_be_stopped_while_waiting() -> None:
    gate = threading.Event()
    lister = ScriptedLister([ObjectList([], "1")], [])
    watcher, _, _ = make_watcher(lister, RecordingSink(), start_after=gate)
    watcher.start()
    watcher.stop(timeout=5)
    assert lister.list_calls == 0


@pytest.mark.parametrize("attempts", [1, 5, 20])
def test_backoff_stays_within_its_ceiling(attempts: int) -> None:
    backoff = Backoff(0.5, 30.0)
    delays = [backoff.next_delay() for _ in range(attempts)]
    assert all(0 < d <= 30.0 for d in delays)
    backoff.reset()
    assert backoff.next_delay() <= 0.5


class FailingLister(ScriptedLister):
    """Every list fails (an object the sink cannot apply, say) until ``fixed`` is set."""

    def __init__(self) -> None:
        super().__init__([], [])
        self.fixed = threading.Event()

    def list_objects(self, kind: ResourceKind) -> ObjectList:
        self.list_calls += 1
        if not self.fixed.is_set():
            raise RuntimeError("relist crashed")
        return ObjectList([node("n1", "5")], "5")

    def watch_objects(self, kind: ResourceKind, resource_version: str,
                      timeout_seconds: int) -> BlockingStream:
        return BlockingStream(event("MODIFIED", node("n1", "6")))


def wait_until(condition: Any, timeout: float = 20.0) -> bool:
    deadline = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return True
        deadline.wait(0.01)
    return bool(condition())


def test_a_watch_whose_relists_keep_failing_is_not_running() -> None:
    """Issue 19, finding 2: every relist after a 410 crashed on one object, so the pod watch
    never ran again while ``/readyz`` said ready; ``running`` (which ``/readyz`` reads) now
    says so."""
    lister = FailingLister()
    watcher, _, _ = make_watcher(lister, RecordingSink())
    watcher.start()
    try:
        assert wait_until(lambda: lister.list_calls >= ResourceWatcher.FAILED_LISTS_NOT_RUNNING)
        assert wait_until(lambda: not watcher.running())
        lister.fixed.set()
        assert wait_until(watcher.running)
    finally:
        watcher.stop(timeout=5)
    assert not watcher.running()
