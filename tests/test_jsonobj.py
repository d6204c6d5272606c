"""``extender.jsonobj.load_object``: one JSON object or one wording for what is wrong, at every
entrance that reads one (API answers, watch lines, the assigned annotation, AdmissionReviews)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from extender.apiserver.client import ApiServerClient
from extender.apiserver.errors import KubeError
from extender.errors import JsonObjectError
from extender.jsonobj import json_type, load_object
from extender.kube.annotations import decode_assignment
from extender.sync.stream import WatchCursor
from extender.webhook.review import ReviewError, decode_review

P = pytest.param


@pytest.mark.parametrize(("data", "expected"), [
    P(b'{"a": 1}', {"a": 1}, id="bytes"),
    P('{"a": [1, 2]}', {"a": [1, 2]}, id="text"),
    P(bytearray(b"{}"), {}, id="an empty object is an object"),
])
def test_an_object_comes_back_as_a_dict(data: bytes | str, expected: dict[str, object]) -> None:
    assert load_object(data, "body") == expected


@pytest.mark.parametrize(("data", "message"), [
    P(b"", "body: not JSON (", id="nothing"),
    P(b"{not json", "body: not JSON (", id="broken JSON"),
    P(b"[1]", "body: must be a JSON object, not a list", id="an array"),
    P(b'"x"', "body: must be a JSON object, not a string", id="a string"),
    P(b"7", "body: must be a JSON object, not a number", id="a number"),
    P(b"true", "body: must be a JSON object, not a boolean", id="a boolean"),
    P(b"null", "body: must be a JSON object, not null", id="null"),
])
def test_what_is_not_an_object_is_named_with_one_wording(data: bytes, message: str) -> None:
    with pytest.raises(JsonObjectError) as caught:
        load_object(data, "body")
    assert str(caught.value).startswith(message)
    assert caught.value.what == "body" and str(caught.value) == f"body: {caught.value.problem}"
    assert isinstance(caught.value, ValueError)  # callers reporting any bad value catch it


def test_without_a_name_the_message_is_the_problem_alone() -> None:
    with pytest.raises(JsonObjectError, match=r"^must be a JSON object, not a list$"):
        load_object(b"[]", "")


def test_json_type_names_json_types() -> None:
    assert [json_type(v) for v in ({}, [], "", True, 1, 1.5, None, object())] == [
        "an object", "a list", "a string", "a boolean", "a number", "a number", "null",
        "a value"]


def test_every_entrance_says_it_the_same_way() -> None:
    """The four callers keep their own error types and the one wording."""
    with pytest.raises(ValueError, match=r"^must be a JSON object, not a list$"):
        decode_assignment("[1]")
    with pytest.raises(ReviewError, match=r"^body: must be a JSON object, not a list$"):
        decode_review(b"[]")
    with pytest.raises(KubeError, match=r"^watch event: must be a JSON object, not a list: "):
        WatchCursor("1").interpret(b"[]")
    with pytest.raises(KubeError, match=r"^watch event: not JSON \("):
        WatchCursor("1").interpret(b"{")
    answer = SimpleNamespace(data=b"[]")  # what the generated client's method returns
    with pytest.raises(KubeError, match=r"^get pod a/b: the API server's answer: must be a JSON "
                                        r"object, not a list$"):
        ApiServerClient._call("get pod a/b", lambda: answer)
