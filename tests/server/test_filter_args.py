"""Filter's bodies with a node list kube-scheduler repeats: the list is parsed once, and every
body decodes exactly as a full parse decodes it (``server/wire.py``, ``FilterArgsDecoder``)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.server.wire import FilterArgsDecoder, WireError, decode_extender_args


def go_body(pod: dict[str, Any], names: list[str]) -> bytes:
    """``ExtenderArgs`` as kube-scheduler's ``encoding/json`` writes it: fields in order."""
    return (b'{"Pod":' + orjson.dumps(pod) + b',"Nodes":null,"NodeNames":' +
            orjson.dumps(names) + b"}")


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "main"}]}}


def test_a_repeated_list_is_parsed_once_and_each_pod_is_its_own() -> None:
    decoder = FilterArgsDecoder()
    names = [f"node-{i}" for i in range(1000)]
    first = decoder(go_body(pod("a"), names))
    second = decoder(go_body(pod("b"), names))
    assert decoder.reused == 1
    assert second["Pod"] == pod("b") and second["Nodes"] is None
    assert second["NodeNames"] == names
    assert first["NodeNames"] is not None and second["NodeNames"] is not None
    # the same strings (hashed once), in a list of its own: a caller may change it
    assert all(x is y for x, y in zip(first["NodeNames"], second["NodeNames"], strict=True))
    second["NodeNames"].append("mine")
    assert decoder(go_body(pod("c"), names))["NodeNames"] == names
    assert decoder.reused == 2
    # another order is another list: parsed in full, and kept for the next body
    shuffled = names[::-1]
    assert decoder(go_body(pod("d"), shuffled))["NodeNames"] == shuffled
    assert decoder.reused == 2
    assert decoder(go_body(pod("e"), shuffled))["NodeNames"] == shuffled
    assert decoder.reused == 3


def test_a_list_whose_names_hold_brackets_is_never_kept() -> None:
    # "a]" cannot be told from the array's end without a parse: such a list is parsed each
    # time (no node is named so; the decode stays exact for whatever is sent)
    decoder = FilterArgsDecoder()
    for name in ("p", "q"):
        assert decoder(go_body(pod(name), ["a]", "b"]))["NodeNames"] == ["a]", "b"]
    assert decoder.reused == 0


POD = orjson.dumps(pod("p")).decode()
OTHER_POD = orjson.dumps(pod("q")).decode()
HEADS = [
    '{"Pod":' + POD + ',"Nodes":null',
    '{"Pod":' + OTHER_POD + ',"Nodes":null',
    '{"Pod":' + POD,
    '{"Pod":' + POD + ',"Pod":' + OTHER_POD,  # a duplicate: the last one counts
    '{"Pod":' + POD + ',"NodeNames":["z"]',  # the tail's list counts
    '{"Pod":' + POD + ',"Nodes":{"items":[]}',
    '{"pod":' + POD,  # Go's decoder folds case
    '{"Pod":{"metadata":{"name":"x"}',  # left open
    '{"Pod":' + POD + ",",  # a trailing comma
    '{"Pod":7',
    '{"X":1',
    "{",
    "{ ",
    '{"Pod":' + POD + " ",  # whitespace before the comma is JSON
    '{"Pod":' + POD + ":",
    "[",
    "",
]
TAILS = [
    ',"NodeNames":["a","b"]}',
    ',"NodeNames":["b","a"]}',
    ',"NodeNames":[]}',
    ',"NodeNames":["a"],"Pod":' + OTHER_POD + "}",  # a member after the list
    ',"NodeNames":["a]","b"]}',
    ',"NodeNames":["a\\"]"]}',  # an escaped quote, then a bracket inside the name
    ',"NodeNames":[1,"a"]}',
    ',"NodeNames":["a"]}}',
    ',"NodeNames":["a"]} ',
    ',"NodeNames":null}',
    ',"NodeNames":["a",]}',
    ',"NodeNames":["a","b"]',
]


def outcome(decode: Any, body: bytes) -> tuple[Any, ...]:
    try:
        args = decode(body)
    except WireError as exc:
        return ("refused", exc.field)
    return ("decoded", args["Pod"], args["Nodes"], args["NodeNames"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(HEADS), st.sampled_from(TAILS)), min_size=1,
                max_size=12))
def test_every_body_decodes_as_a_full_parse_decodes_it(
        bodies: list[tuple[str, str]]) -> None:
    # any sequence of kube-scheduler's bodies and hostile ones, repeated tails included: the
    # memo's answer (or the field it refuses) is the full parse's, body by body
    decoder = FilterArgsDecoder()
    for head, tail in bodies:
        body = (head + tail).encode()
        assert outcome(decoder, body) == outcome(decode_extender_args, body), body
