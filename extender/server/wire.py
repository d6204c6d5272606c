"""The extender wire format, exactly as ``k8s.io/kube-scheduler/extender/v1`` encodes it.

The Go structs carry no json tags, so keys are the Go field names (PascalCase); Go's decoder
matches keys case-insensitively, so we do too when decoding (exact spelling first). Embedded
Kubernetes objects (``Pod``, ``Nodes``) keep their own camelCase JSON and are passed through
as raw dicts: they are read by ``extender.kube`` decoders, never by a model layer.

Every decoding error is a ``WireError`` naming the field, answered with HTTP 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import orjson

from extender.errors import ExtenderError, shown
from extender.kube import objects
from extender.kube.shape import ShapeError, check_node

MAX_NAME = 253
"""Longest object name Kubernetes accepts (a DNS subdomain)."""
MIN_PRIORITY = 0
MAX_PRIORITY = 10


class NodeList(TypedDict):
    metadata: NotRequired[dict[str, Any]]
    items: list[dict[str, Any]]


class ExtenderArgs(TypedDict):
    Pod: dict[str, Any]
    Nodes: NodeList | None
    """Set when the extender is configured ``nodeCacheCapable: false`` (and by cluster
    autoscaler simulations)."""
    NodeNames: list[str] | None
    """Set when ``nodeCacheCapable: true``."""


class ExtenderFilterResult(TypedDict, total=False):
    Nodes: NodeList | None
    NodeNames: list[str] | None
    FailedNodes: dict[str, str]
    FailedAndUnresolvableNodes: dict[str, str]
    Error: str


class HostPriority(TypedDict):
    Host: str
    Score: int


class ExtenderBindingArgs(TypedDict):
    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(TypedDict):
    Error: str


class WireError(ExtenderError):
    """A request body that does not match the protocol; ``field`` says where."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def _object(body: bytes, what: str) -> dict[str, Any]:
    if not body:
        raise WireError("body", f"empty; expected a JSON {what} object")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireError("body", f"not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise WireError("body", f"expected a JSON {what} object, got {type(doc).__name__}")
    return doc


def _get(doc: Mapping[str, Any], key: str) -> Any:
    """Go's ``encoding/json``: the exact key, else a case-insensitive match."""
    if key in doc:
        return doc[key]
    folded = key.casefold()
    for name, value in doc.items():
        if name.casefold() == folded:
            return value
    return None


def required_pod(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Pod`` of a verb's arguments (the shape of its parts is checked by its decoders)."""
    pod = _get(doc, "Pod")
    if not isinstance(pod, dict):
        raise WireError("Pod", "required; must be a Pod object" if pod is None
                        else f"must be a Pod object, got {type(pod).__name__}")
    return pod


def decode_extender_args(body: bytes) -> ExtenderArgs:
    """``ExtenderArgs`` for filter and prioritize."""
    doc = _object(body, "ExtenderArgs")
    pod = required_pod(doc)
    names = _get(doc, "NodeNames")
    nodes = _get(doc, "Nodes")
    if names is not None:
        # one C-level pass: every element's type is str (orjson gives exact types)
        if not isinstance(names, list) or not set(map(type, names)) <= {str}:
            raise WireError("NodeNames", "must be a list of node names (strings)")
        return ExtenderArgs(Pod=pod, Nodes=None, NodeNames=names)
    if nodes is None:
        raise WireError("NodeNames", "one of NodeNames (nodeCacheCapable: true) or Nodes "
                                     "must be set")
    return ExtenderArgs(Pod=pod, Nodes=_node_list(nodes), NodeNames=None)


_NAMES_MEMBER = b',"NodeNames":['
_LIST_DELIMITERS = (b"[", b"]", b"{", b"}")
_NO_MEMBER_BEFORE = (b"", b"{", b"[", b",", b":")
"""What a head may not end with (but whitespace) for ``,"NodeNames"`` to follow a member."""


class FilterArgsDecoder:
    """``decode_extender_args`` that parses a node list once while kube-scheduler repeats it.

    kube-scheduler encodes ``ExtenderArgs`` in its fields' order (``Pod``, ``Nodes``,
    ``NodeNames``), so a body ends with its node list, and during a burst the next pod's list
    is most often the same bytes (69-79 % of filters in bursts at 1,000 nodes: kube-scheduler
    lists the feasible nodes in the order its parallel filters finish, which mostly repeats).
    A body that ends with exactly the last list's bytes is parsed up to them (the pod), and
    its names are a copy of the last list: the same strings, whose hashes are computed already
    and which the rows memo (``scheduling/evaluate.py``) compares by identity.

    Exact: a list is kept only when the body parsed in full, its tail from the first
    ``,"NodeNames":[`` holds no bracket or brace but the array's own and the object's closing
    one (so it is the top-level ``NodeNames`` member, and the last member), and its elements
    are strings; a body ending with those same bytes then parses, with or without them, to the
    same pod and names: its head must end a member for the list to follow (else the full
    parse refuses it), and then parses closed with ``}`` if and only if the body parses,
    to the same members but the list. Any other body takes the full parse."""

    def __init__(self) -> None:
        self._last: tuple[bytes, list[str]] | None = None
        """The last kept list: its bytes from ``,"NodeNames":[`` to the body's end, and it."""
        self.reused = 0
        """Bodies whose node list was the last one's (``node_lists_reused``)."""

    def __call__(self, body: bytes) -> ExtenderArgs:
        last = self._last
        if last is not None and body.endswith(last[0]):
            head = body[:len(body) - len(last[0])]
            if head.rstrip()[-1:] not in _NO_MEMBER_BEFORE:
                pod = required_pod(_object(head + b"}", "ExtenderArgs"))
                self.reused += 1
                return ExtenderArgs(Pod=pod, Nodes=None, NodeNames=list(last[1]))
        args = decode_extender_args(body)
        names = args["NodeNames"]
        at = body.find(_NAMES_MEMBER)  # right after the pod (rfind would read the list)
        if names is not None and at > 0 and body.endswith(b"]}"):
            start, end = at + len(_NAMES_MEMBER), len(body) - 2
            if all(body.find(delimiter, start, end) < 0 for delimiter in _LIST_DELIMITERS):
                self._last = body[at:], list(names)
        return args


def _node_list(nodes: object) -> NodeList:
    if not isinstance(nodes, dict):
        raise WireError("Nodes", "must be a NodeList object")
    items = nodes.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise WireError("Nodes.items", "must be a list of Node objects")
    for i, item in enumerate(items):
        try:
            check_node(item, f"Nodes.items[{i}]")
        except ShapeError as exc:
            raise WireError(exc.field, f"must be {exc.accepted}, got {shown(exc.value)}") from exc
        name = objects.name(item)
        if not name:
            raise WireError(f"Nodes.items[{i}].metadata.name", "required")
    result = NodeList(items=items)
    if isinstance(nodes.get("metadata"), dict):
        result["metadata"] = nodes["metadata"]
    return result


def node_names(args: ExtenderArgs) -> list[str]:
    """The candidate names, whichever form the request used."""
    if args["NodeNames"] is not None:
        return args["NodeNames"]
    nodes = args["Nodes"]
    assert nodes is not None
    return [item["metadata"]["name"] for item in nodes["items"]]


def decode_binding_args(body: bytes) -> ExtenderBindingArgs:
    doc = _object(body, "ExtenderBindingArgs")
    values: dict[str, str] = {}
    for key in ("PodName", "PodNamespace", "PodUID", "Node"):
        value = _get(doc, key)
        if value is None:
            raise WireError(key, "required; must be a non-empty string")
        if not isinstance(value, str):
            raise WireError(key, f"must be a string, got {shown(value)}")
        if not value and key != "PodNamespace":
            raise WireError(key, "must not be empty")
        if len(value) > MAX_NAME:
            raise WireError(key, f"a {len(value)}-character name is longer than any Kubernetes "
                                 f"name (at most {MAX_NAME})")
        values[key] = value
    return ExtenderBindingArgs(PodName=values["PodName"], PodNamespace=values["PodNamespace"],
                               PodUID=values["PodUID"], Node=values["Node"])


def filter_result(args: ExtenderArgs, feasible: list[str], failed: dict[str, str],
                  unresolvable: dict[str, str], error: str = "") -> ExtenderFilterResult:
    """Answer in the form of the request: ``NodeNames`` for names, ``Nodes`` for nodes (the
    feasible Node objects as sent)."""
    result = ExtenderFilterResult(FailedNodes=failed, FailedAndUnresolvableNodes=unresolvable,
                                  Error=error)
    if args["NodeNames"] is not None:
        result["NodeNames"] = feasible
        return result
    nodes = args["Nodes"]
    assert nodes is not None
    keep = set(feasible)
    items = [item for item in nodes["items"] if item["metadata"]["name"] in keep]
    result["Nodes"] = NodeList(metadata=nodes.get("metadata") or {}, items=items)
    return result


def filter_error(args: ExtenderArgs | None, message: str) -> ExtenderFilterResult:
    """A filter that could not decide: kube-scheduler fails the attempt and retries."""
    result = ExtenderFilterResult(FailedNodes={}, FailedAndUnresolvableNodes={}, Error=message)
    if args is None or args["NodeNames"] is not None:
        result["NodeNames"] = []
    else:
        result["Nodes"] = NodeList(metadata={}, items=[])
    return result


def encode(document: object) -> bytes:
    return orjson.dumps(document)
