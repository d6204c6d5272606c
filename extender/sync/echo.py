"""A Binding's echo on the pod watch, recognised: the pod's bound version decoded from its
unbound one (issue 22: the full decode of every bound pod was ~0.1 ms of the watch's work per
pod, for an object whose only changes are the ones a Binding makes).

The applier keeps, per UID, the last unbound version of each pending pod it decoded (the
object the watch already parsed, and its ``PodInfo``). When the same pod comes back bound, the
decode is skipped if the new object equals the kept one **except for exactly what a Binding
changes**:

- ``spec.nodeName`` (absent before, a string now);
- ``metadata.resourceVersion`` and ``metadata.managedFields`` (the API server's bookkeeping);
- ``metadata.annotations``: only the extender's own keys (``assigned``, ``assigned-observed``,
  ``visible-devices``) may be added or changed, each to a string;
- ``status.conditions`` (the Binding sets ``PodScheduled``); the rest of ``status`` is equal.

Then every field the decoder reads (``kube/decode_pod.py``: the containers, the node selection,
the labels, the other annotations, the phase, the identity) is unchanged, so the request, the
CPU and memory and the terminal flag are the kept decode's; what the Binding changed is read
here as the decoder reads it: the node name, and the assignment (``assigned-observed`` before
``assigned``, ``""`` absent). The shape check the decode would have run holds too: the kept
object passed it, the changed strings are checked to be strings and the two API-written parts
for their nesting depth. Anything else (another change beside the Binding, a malformed
annotation, a kept decode with problems) is decoded in full, as before; so are the trust checks
(``sync/trust.py``), which run after the decode on either path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.kube import objects
from extender.kube.annotations import decode_assignment
from extender.kube.shape import MAX_DEPTH, ShapeError, check_depth
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_OBSERVED,
    ANNOTATION_VISIBLE_DEVICES,
    ASSIGNMENT_ANNOTATIONS,
    Assignment,
    PodInfo,
)
from extender.sync.trust import Claims

OURS = frozenset({ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED, ANNOTATION_VISIBLE_DEVICES})
"""The annotations a Binding of the extender writes (``apiserver/binder.py``)."""

_METADATA_WRITTEN = frozenset({"resourceVersion", "managedFields", "annotations"})
_MISSING = object()


class UnboundPods:
    """The last unbound version of each pending pod, and its decode (by UID). Not locked:
    the applier's lock serialises every call."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Mapping[str, Any], PodInfo]] = {}
        self.hits = 0
        """Bound pods decoded from their unbound version."""

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, pod: Mapping[str, Any], info: PodInfo) -> None:
        """``pod`` (unbound) decoded to ``info``; only a clean decode is kept."""
        if info.problems or info.node_name or info.terminal:
            self._kept.pop(info.key.uid, None)
            return
        self._kept[info.key.uid] = (pod, info)

    def forget(self, uid: str) -> None:
        self._kept.pop(uid, None)

    def clear(self) -> None:
        self._kept = {}

    def bound(self, pod: Mapping[str, Any]) -> Echo | None:
        """The decode of ``pod`` (bound) if it is its kept version plus a Binding, else
        ``None`` (decode it). The kept version is dropped either way."""
        kept = self._kept.pop(objects.uid(pod), None)
        if kept is None:
            return None
        before, info = kept
        node = _bound_node(before, pod)
        if node is None:
            return None
        annotations = objects.annotations(pod)
        readable, assignment = _assignment(annotations)
        if not readable:
            return None
        self.hits += 1
        # without a correction, ``claims_of`` would decode ``assigned`` to the same value
        claims = Claims(assignment, None, None) if not annotations.get(ANNOTATION_OBSERVED) \
            else None
        return Echo(replace(info, node_name=node, assignment=assignment), claims)


@dataclass(frozen=True)
class Echo:
    info: PodInfo
    """What ``PodDecoder.decode`` gives for the bound pod."""
    claims: Claims | None
    """What ``trust.claims_of`` gives for its annotations (``None``: call it)."""


def _bound_node(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """The node ``after`` is bound to, if it differs from ``before`` only by a Binding."""
    if len(before) != len(after) or any(
            key not in ("metadata", "spec", "status") and before.get(key, _MISSING) != value
            for key, value in after.items()):
        return None
    spec_before, spec = before.get("spec"), after.get("spec")
    if not isinstance(spec_before, dict) or not isinstance(spec, dict):
        return None
    node = spec.get("nodeName")
    if not isinstance(node, str) or not node or "nodeName" in spec_before or \
            len(spec) != len(spec_before) + 1 or \
            not _equal_except(spec_before, spec, frozenset({"nodeName"})):
        return None
    if not _metadata_by_binding(before.get("metadata"), after.get("metadata")):
        return None
    status_before, status = before.get("status", {}), after.get("status", {})
    if not isinstance(status_before, dict) or not isinstance(status, dict) or \
            not _equal_except(status_before, status, frozenset({"conditions"})) or \
            not _shallow(status.get("conditions"), "status.conditions", 2):
        return None
    return node


def _metadata_by_binding(before: object, after: object) -> bool:
    if not isinstance(before, dict) or not isinstance(after, dict) or \
            not _equal_except(before, after, _METADATA_WRITTEN):
        return False
    if not isinstance(after.get("resourceVersion", ""), str) or \
            not _shallow(after.get("managedFields"), "metadata.managedFields", 2):
        return False
    old = before.get("annotations") or {}
    new = after.get("annotations") or {}
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    for key in old.keys() | new.keys():
        value = new.get(key, _MISSING)
        if key in OURS:
            if value is not _MISSING and not isinstance(value, str):
                return False
        elif value != old.get(key, _MISSING):
            return False
    return True


def _equal_except(before: Mapping[str, Any], after: Mapping[str, Any],
                  written: frozenset[str]) -> bool:
    """Every key of either mapping outside ``written`` has the same value in both."""
    for key, value in after.items():
        if key not in written and before.get(key, _MISSING) != value:
            return False
    return all(key in written or key in after for key in before)


def _shallow(part: object, path: str, depth: int) -> bool:
    """``part``, at ``depth`` below the object's root, stays within the shape check's limit."""
    if not isinstance(part, dict | list):
        return True
    try:
        check_depth(part, path, MAX_DEPTH - depth)
    except ShapeError:
        return False
    return True


def _assignment(annotations: Mapping[str, Any]) -> tuple[bool, Assignment | None]:
    """``(readable, assignment)`` as ``PodDecoder.decode`` reads it (the correction first;
    ``""`` is absent); not readable if one cannot be decoded (the decoder reports it as a
    problem and goes on to the next: decode in full)."""
    for annotation in ASSIGNMENT_ANNOTATIONS:
        raw = annotations.get(annotation)
        if raw is None or raw == "":
            continue
        try:
            return True, decode_assignment(raw)
        except ValueError:
            return False, None
    return True, None
