"""A bound pod's status reports recognised: its decode kept while nothing the decoder reads
changed (issue 22: the full decode of kwok's ``Running`` report was ~0.07 ms of the watch's
work per pod; a kubelet sends a few such reports per pod).

Once a pod is bound, most watch events about it are the kubelet's status reports (``Running``,
conditions, container states, IPs). The decoder (``kube/decode_pod.py``) reads ``spec``,
``metadata`` and, of ``status``, only whether the phase is terminal; the trust claims
(``sync/trust.py``) read annotations. So the applier keeps, per bound pod, a digest of exactly
that (the object but its ``status``, with ``metadata`` less ``resourceVersion`` and
``managedFields``, which the API server writes on every update; and whether the phase is
terminal) with the decode and the claims it gave. An event with the same digest reuses them;
the parts of the shape check the decode would have run that can differ are run here:
``status`` is an object whose ``phase`` is a string, it and ``managedFields`` nest no deeper
than the limit, ``resourceVersion`` is a string. Anything else (a label, an annotation, the
spec changed, the pod finished, a digest that cannot be made) is decoded in full and kept
again. The trust checks run after the decode on either path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from extender.kube import objects
from extender.kube.decode_pod import TERMINAL_PHASES
from extender.kube.shape import MAX_DEPTH, ShapeError, check_depth
from extender.model import PodInfo
from extender.sync.trust import Claims

_WRITTEN_EVERY_UPDATE = frozenset({"resourceVersion", "managedFields"})


@dataclass(frozen=True)
class Seen:
    """What a lookup found: the kept decode and claims, or only the event's digest."""

    digest: bytes | None
    """``None``: the event cannot be digested (it is decoded in full and not kept)."""
    info: PodInfo | None = None
    claims: Claims | None = None


class SeenPods:
    """Per bound pod: the digest of what its decode read, the decode and the claims. Not
    locked: the applier's lock serialises every call."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[bytes, PodInfo, Claims]] = {}
        self.hits = 0
        """Events whose decode was reused."""

    def __len__(self) -> int:
        return len(self._kept)

    def lookup(self, pod: Mapping[str, Any]) -> Seen:
        """The kept decode of ``pod`` when only what the decoder does not read changed."""
        digest = _digest(pod)
        kept = self._kept.get(objects.uid(pod)) if digest is not None else None
        if kept is None or kept[0] != digest:
            return Seen(digest)
        metadata, status = pod["metadata"], pod.get("status", {})  # dicts: digested
        version, phase = metadata.get("resourceVersion"), status.get("phase")
        if (version is not None and not isinstance(version, str)) or \
                (phase is not None and not isinstance(phase, str)):
            return Seen(digest)
        try:
            check_depth(status, "status", MAX_DEPTH - 1)
            check_depth(metadata.get("managedFields"), "metadata.managedFields", MAX_DEPTH - 2)
        except ShapeError:
            return Seen(digest)
        self.hits += 1
        return Seen(digest, kept[1], kept[2])

    def keep(self, digest: bytes | None, info: PodInfo, claims: Claims) -> None:
        """Keep a bound pod's clean decode (anything else is forgotten)."""
        if digest is None or info.problems or not info.node_name or info.terminal:
            self._kept.pop(info.key.uid, None)
            return
        self._kept[info.key.uid] = (digest, info, claims)

    @staticmethod
    def digest(pod: Mapping[str, Any]) -> bytes | None:
        """What ``lookup`` compares (``None``: ``pod`` cannot be kept)."""
        return _digest(pod)

    def forget(self, uid: str) -> None:
        self._kept.pop(uid, None)

    def clear(self) -> None:
        self._kept = {}


def _digest(pod: Mapping[str, Any]) -> bytes | None:
    """A digest of what the decoder and the claims read of ``pod``; ``None`` if the parts
    are not of the shape the decoder accepts (the decode reports that)."""
    metadata, status = pod.get("metadata"), pod.get("status", {})
    if not isinstance(metadata, dict) or not isinstance(status, dict):
        return None
    read = {key: value for key, value in pod.items() if key not in ("metadata", "status")}
    read["metadata"] = {key: value for key, value in metadata.items()
                        if key not in _WRITTEN_EVERY_UPDATE}
    try:
        encoded = orjson.dumps([read, status.get("phase") in TERMINAL_PHASES])
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, say
        return None
    return hashlib.blake2b(encoded, digest_size=16).digest()
