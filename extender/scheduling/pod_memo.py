"""Decoded pods by content: the pods of one burst (a Deployment's replicas, a Job's workers)
differ only in their identity, so the second one's decode is a dictionary lookup.

A pod's ``DecodedPod`` (``scheduling.pods.decode_pod``) is a function of its namespace, labels,
annotations, ``status.phase`` and the parts of ``spec`` the decoders read (``kube.pod_content``:
not the volumes, whose service-account token volume has a random name per pod; the pod watch's
decode keys on the same content), of the platform (fixed
for the process) and, for a pod typed by its node selection, of the inventory's node map; its
key and resourceVersion are only carried along. After the shape check (which also vouches for
the identity fields and everything else it checks) the memo keys on those parts encoded by
orjson (equal bytes: equal JSON values) and answers a hit with the kept decode, re-keyed.
``tests/scheduling/test_pod_memo.py`` runs the decode on a pod that records every field read
and fails if one is outside the key. A selection-typed decode is answered only while the node map is
the one it was typed against. An invalid request is never kept (it is rare, and its message is
its own pod's).

Why: the decode is the largest part of a pod's first filter (~0.3 ms of ~1.3, issue 22);
encoding the key costs a few microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from extender.kube.pod_content import DEFAULT_CAPACITY, ByContent, content_key
from extender.kube.shape import ShapeError, check_pod
from extender.model import NodeInfo, PodKey
from extender.platform import Platform
from extender.scheduling.pods import DecodedPod, decode_pod, invalid_shape


class DecodeMemo:
    """``decode`` is ``decode_pod`` with the decodes of the last ``capacity`` distinct pod
    contents kept. Thread-safe; ``hits`` counts the decodes it saved."""

    def __init__(self, platform: Platform, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._platform = platform
        self._kept: ByContent[DecodedPod] = ByContent(capacity)

    @property
    def hits(self) -> int:
        return self._kept.hits

    def decode(self, pod: Mapping[str, Any], key: PodKey, version: str,
               nodes: Mapping[str, NodeInfo] | None = None) -> DecodedPod:
        try:
            check_pod(pod)
        except ShapeError as exc:
            return invalid_shape(key, version, exc)
        content = content_key(pod)
        kept = self._kept.get(content, lambda decoded: decoded.typed_against is None or
                              decoded.typed_against is nodes) if content is not None else None
        if kept is not None:
            return replace(kept, key=key, resource_version=version)
        decoded = decode_pod(self._platform, pod, key, version, nodes, checked=True)
        if content is not None and decoded.error is None:
            self._kept.put(content, decoded)
        return decoded
