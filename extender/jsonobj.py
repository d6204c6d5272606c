"""One JSON object from bytes or text, with one wording for what is wrong.

Every entrance that reads a JSON document whose top level must be an object (an API answer, a
watch event line, an annotation, an AdmissionReview body) calls ``load_object``; what is not
JSON, or not an object, raises ``JsonObjectError`` (``extender.errors``), which each caller
turns into its own error type (``KubeError``, ``ReviewError``, a pod's problem) without
rewording it.
"""

from __future__ import annotations

from typing import Any

import orjson

from extender.errors import JsonObjectError

_JSON_TYPES: dict[type, str] = {dict: "an object", list: "a list", str: "a string",
                                bool: "a boolean", int: "a number", float: "a number",
                                type(None): "null"}


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, with its article: ``a list``, ``null``."""
    return _JSON_TYPES.get(type(value), "a value")


def load_object(data: bytes | bytearray | memoryview | str, what: str) -> dict[str, Any]:
    """``data`` decoded, when it is one JSON object; raises ``JsonObjectError`` naming
    ``what`` (``""``: the caller's message already says where) otherwise:
    ``body: not JSON (unexpected character: line 1 column 1 (char 0))``,
    ``body: must be a JSON object, not a list``."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise JsonObjectError(what, f"not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise JsonObjectError(what, f"must be a JSON object, not {json_type(doc)}")
    return doc
