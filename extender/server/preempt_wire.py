"""``ExtenderPreemptionArgs`` / ``ExtenderPreemptionResult`` as
``k8s.io/kube-scheduler/extender/v1`` encodes them (no json tags: the Go field names; decoded
case-insensitively like Go):

    request, nodeCacheCapable: true
      {"Pod":{..},"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"3f"}],"NumPDBViolations":0}}}
    request, nodeCacheCapable: false
      {"Pod":{..},"NodeNameToVictims":{"n1":{"Pods":[{<Pod>}],"NumPDBViolations":0}}}
    response, always the meta form
      {"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"3f"}],"NumPDBViolations":0}}}

Checked at the edge like the other verbs: every error is a ``WireError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.errors import shown
from extender.kube import objects
from extender.server.wire import MAX_NAME, WireError, _get, _object, required_pod

MAX_UID = 128
"""Longer than any UID Kubernetes writes (36 characters)."""


@dataclass(frozen=True)
class PreemptionArgs:
    pod: dict[str, Any]
    victims: dict[str, list[str]]
    """Node -> UIDs of kube-scheduler's victims there, in the order sent."""
    meta_form: bool
    """The request used ``NodeNameToMetaVictims`` (``nodeCacheCapable: true``)."""


def decode_preemption_args(body: bytes) -> PreemptionArgs:
    doc = _object(body, "ExtenderPreemptionArgs")
    pod = required_pod(doc)
    meta = _get(doc, "NodeNameToMetaVictims")
    full = _get(doc, "NodeNameToVictims")
    if meta is not None:
        return PreemptionArgs(pod, _victims(meta, "NodeNameToMetaVictims", _meta_uid), True)
    if full is not None:
        return PreemptionArgs(pod, _victims(full, "NodeNameToVictims", _pod_uid), False)
    raise WireError("NodeNameToMetaVictims", "one of NodeNameToMetaVictims (nodeCacheCapable: "
                                             "true) or NodeNameToVictims must be set")


def _victims(value: object, field: str, uid_of: Any) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise WireError(field, f"must be an object of node name -> victims, got "
                               f"{type(value).__name__}")
    out: dict[str, list[str]] = {}
    for node, victims in value.items():
        where = f"{field}[{node}]"
        if not node or len(node) > MAX_NAME:
            raise WireError(where, f"a node name must have 1..{MAX_NAME} characters")
        if victims is None:
            out[node] = []
            continue
        if not isinstance(victims, dict):
            raise WireError(where, f"must be a victims object, got {type(victims).__name__}")
        pods = _get(victims, "Pods")
        if pods is None:
            pods = []
        if not isinstance(pods, list):
            raise WireError(f"{where}.Pods", f"must be a list, got {type(pods).__name__}")
        pdb = _get(victims, "NumPDBViolations")
        if pdb is not None and (not isinstance(pdb, int) or isinstance(pdb, bool)):
            raise WireError(f"{where}.NumPDBViolations", f"must be an integer, got {shown(pdb)}")
        out[node] = [uid_of(p, f"{where}.Pods[{i}]") for i, p in enumerate(pods)]
    return out


def _check_uid(uid: object, where: str) -> str:
    if not isinstance(uid, str) or not uid:
        raise WireError(where, f"must be a non-empty string, got {shown(uid)}")
    if len(uid) > MAX_UID:
        raise WireError(where, f"a {len(uid)}-character UID is longer than any (at most "
                               f"{MAX_UID})")
    return uid


def _meta_uid(pod: object, where: str) -> str:
    if not isinstance(pod, dict):
        raise WireError(where, f"must be a MetaPod object, got {type(pod).__name__}")
    return _check_uid(_get(pod, "UID"), f"{where}.UID")


def _pod_uid(pod: object, where: str) -> str:
    if not isinstance(pod, dict):
        raise WireError(where, f"must be a Pod object, got {type(pod).__name__}")
    return _check_uid(objects.uid(pod), f"{where}.metadata.uid")


def preemption_result(victims: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """``ExtenderPreemptionResult``; NumPDBViolations is 0 (see ``core/preempt.py``)."""
    return {"NodeNameToMetaVictims": {
        node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": 0}
        for node, uids in victims.items() if uids}}
