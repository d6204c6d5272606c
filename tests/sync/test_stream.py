"""The pure watch parsing: line reassembly and the resourceVersion cursor."""

from __future__ import annotations

import orjson
import pytest

from extender.apiserver.errors import Gone, KubeError
from extender.sync.stream import LineBuffer, StepKind, WatchCursor


def line(event_type: str, rv: str, name: str = "n1") -> bytes:
    return orjson.dumps({"type": event_type, "object": {
        "metadata": {"name": name, "resourceVersion": rv}}})


def test_line_buffer_reassembles_lines_split_across_chunks() -> None:
    buffer = LineBuffer()
    whole = line("ADDED", "5") + b"\n" + line("MODIFIED", "6") + b"\n"
    cut = len(whole) // 3
    assert buffer.feed(whole[:cut]) == []
    assert buffer.feed(whole[cut:]) == [line("ADDED", "5"), line("MODIFIED", "6")]
    assert buffer.pending == b""


def test_line_buffer_keeps_an_incomplete_last_line_and_skips_blank_lines() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b"\n\n" + line("ADDED", "5") + b"\n{\"type\"") == [line("ADDED", "5")]
    assert buffer.pending == b'{"type"'


@pytest.mark.parametrize("event_type", ["ADDED", "MODIFIED", "DELETED"])
def test_object_events_are_applied_and_move_the_cursor(event_type: str) -> None:
    cursor = WatchCursor("1")
    step = cursor.interpret(line(event_type, "42"))
    assert step.kind is StepKind.APPLY
    assert step.event_type == event_type
    assert step.obj["metadata"]["name"] == "n1"
    assert cursor.resource_version == "42"


def test_bookmark_moves_the_cursor_without_applying() -> None:
    cursor = WatchCursor("1")
    step = cursor.interpret(orjson.dumps({"type": "BOOKMARK", "object": {
        "kind": "Node", "metadata": {"resourceVersion": "77",
                                     "annotations": {"k8s.io/initial-events-end": "true"}}}}))
    assert step.kind is StepKind.BOOKMARK
    assert cursor.resource_version == "77"


def test_unknown_event_types_are_skipped() -> None:
    cursor = WatchCursor("9")
    step = cursor.interpret(orjson.dumps({"type": "SOMETHING_NEW", "object": {
        "metadata": {"resourceVersion": "99"}}}))
    assert step.kind is StepKind.SKIP
    assert cursor.resource_version == "9"


def test_error_410_means_gone() -> None:
    cursor = WatchCursor("9")
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
              "message": "too old resource version: 9 (120)", "reason": "Expired", "code": 410}
    with pytest.raises(Gone, match="too old resource version"):
        cursor.interpret(orjson.dumps({"type": "ERROR", "object": status}))


def test_other_errors_and_garbage_are_kube_errors() -> None:
    cursor = WatchCursor("9")
    with pytest.raises(KubeError) as raised:
        cursor.interpret(orjson.dumps({"type": "ERROR", "object": {"code": 500,
                                                                   "message": "boom"}}))
    assert not isinstance(raised.value, Gone)
    with pytest.raises(KubeError, match=r"watch event: not JSON \("):
        cursor.interpret(b"{not json")
    with pytest.raises(KubeError, match="watch event: must be a JSON object, not a list"):
        cursor.interpret(b"[1, 2]")
