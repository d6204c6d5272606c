"""Encode the big answers (thousands of nodes) without building a dict per node.

A 5,000-node filter answer is a ``FailedNodes`` map with thousands of entries but only a few
distinct messages, and a prioritize answer has at most ten distinct scores. So nodes are grouped
by message (or score), each group's names are encoded once by orjson, and the per-node JSON is
stamped out by one ``bytes.replace`` per group. That is exact JSON as long as orjson wrote no
escape sequence: then no name contains a quote, and ``","`` separates names and nothing else.
Node names are DNS subdomains, so that always holds for what kube-scheduler sends; anything
else takes the plain path (``orjson.dumps`` of dicts).

``Answer`` carries the bytes; ``document()`` (and ``answer["Key"]``) decode them back, for
tests and debugging.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from extender.core.rowops import flat_nonzero
from extender.server.wire import MAX_PRIORITY


@dataclass(frozen=True)
class Answer:
    """An encoded verb answer (HTTP 200 body)."""

    body: bytes

    def document(self) -> Any:
        return orjson.loads(self.body)


@dataclass(frozen=True)
class NodeGroup:
    """Nodes that share one message (filter) or one score (prioritize)."""

    names: Sequence[str]
    value: str | int


def pick(names: Sequence[str], positions: npt.NDArray[np.intp]) -> list[str]:
    """``[names[i] for i in positions]`` at C speed."""
    if len(positions) == 0:
        return []
    if len(positions) == 1:
        return [names[int(positions[0])]]
    return list(itemgetter(*positions.tolist())(names))


def _names_json(names: Sequence[str]) -> bytes | None:
    """``"a","b"`` if it can be stamped safely, else ``None``: no escapes, and no comma inside
    a name (``","`` is the separator the stampers split on; a name ``,`` would be one)."""
    encoded = orjson.dumps(list(names))
    if b"\\" in encoded or encoded.count(b",") != max(len(names) - 1, 0):
        return None
    return encoded[1:-1]


def _map_entries(group: NodeGroup) -> bytes | None:
    """``"a":"msg","b":"msg"`` for one group of a FailedNodes map."""
    inner = _names_json(group.names)
    if inner is None:
        return None
    value = orjson.dumps(group.value)
    return inner.replace(b'","', b'":' + value + b',"') + b":" + value


def encode_node_map(groups: Sequence[NodeGroup]) -> bytes:
    """A ``FailedNodesMap`` JSON object from groups of nodes sharing a message."""
    parts = []
    for group in groups:
        if not group.names:
            continue
        part = _map_entries(group)
        if part is None:
            return orjson.dumps({name: g.value for g in groups for name in g.names})
        parts.append(part)
    return b"{" + b",".join(parts) + b"}"


def encode_filter_names(feasible: Sequence[str], failed: Sequence[NodeGroup],
                        unresolvable: Sequence[NodeGroup], error: str = "") -> Answer:
    """``ExtenderFilterResult`` in the ``NodeNames`` form."""
    return Answer(b'{"NodeNames":' + orjson.dumps(list(feasible))
                  + b',"FailedNodes":' + encode_node_map(failed)
                  + b',"FailedAndUnresolvableNodes":' + encode_node_map(unresolvable)
                  + b',"Error":' + orjson.dumps(error) + b"}")


def encode_priorities(names: Sequence[str], scores: npt.NDArray[np.int64]) -> Answer:
    """``HostPriorityList`` with the non-zero scores only: kube-scheduler gives every node
    missing from the list 0 (``prioritizeNodes`` sums a map that defaults to 0), so the
    zeros would only cost bytes on both sides. Grouped by score; order is irrelevant."""
    parts = []
    for score in range(MAX_PRIORITY, 0, -1):
        positions = flat_nonzero(scores == score)
        if len(positions) == 0:
            continue
        hosts = pick(names, positions)
        inner = _names_json(hosts)
        if inner is None:
            entries = [{"Host": n, "Score": int(s)} for n, s in zip(names, scores.tolist(),
                                                                    strict=True) if s]
            return Answer(orjson.dumps(entries))
        close = b',"Score":%d}' % score
        parts.append(b'{"Host":' + inner.replace(b'","', b'"' + close + b',{"Host":"')
                     + close)
    return Answer(b"[" + b",".join(parts) + b"]")


def encode_document(document: object) -> Answer:
    return Answer(orjson.dumps(document))
