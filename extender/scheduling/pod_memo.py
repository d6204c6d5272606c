"""Decoded pods by content: the pods of one burst (a Deployment's replicas, a Job's workers)
differ only in their identity, so the second one's decode is a dictionary lookup.

A pod's ``DecodedPod`` (``scheduling.pods.decode_pod``) is a function of its namespace, labels,
annotations, ``status.phase`` and the parts of ``spec`` the decoders read (``SPEC_READ``: not the
volumes, whose service-account token volume has a random name per pod), of the platform (fixed
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

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from extender.kube import objects
from extender.kube.shape import ShapeError, check_pod
from extender.model import NodeInfo, PodKey
from extender.platform import Platform
from extender.scheduling.pods import DecodedPod, decode_pod, invalid_shape

DEFAULT_CAPACITY = 256
"""Distinct pod contents kept (least recently used go); each is a few hundred bytes."""


SPEC_READ = ("nodeName", "nodeSelector", "affinity", "overhead")
"""The fields of ``spec`` the decode reads, besides its containers' and init containers'."""
CONTAINER_READ = ("name", "restartPolicy", "resources")
"""The fields of a container the decode reads."""


def _containers(spec: Mapping[str, Any], field: str) -> list[list[Any]]:
    return [[c.get(name) for name in CONTAINER_READ] if isinstance(c, Mapping) else c
            for c in spec.get(field) or ()]


def content_key(pod: Mapping[str, Any]) -> bytes | None:
    """What the decode reads, encoded; ``None`` if it cannot be encoded (not plain JSON).
    Call after ``check_pod`` (the shapes it vouches for are not re-checked here)."""
    spec = objects.section(pod, "spec")
    try:
        return orjson.dumps([
            objects.namespace(pod), objects.labels(pod), objects.annotations(pod),
            objects.section(pod, "status").get("phase"),
            [spec.get(name) for name in SPEC_READ],
            _containers(spec, "containers"), _containers(spec, "initContainers")])
    except TypeError:  # orjson.JSONEncodeError: a mapping that is not a dict, a set, ...
        return None


class DecodeMemo:
    """``decode`` is ``decode_pod`` with the decodes of the last ``capacity`` distinct pod
    contents kept. Thread-safe; ``hits`` counts the decodes it saved."""

    def __init__(self, platform: Platform, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._platform = platform
        self._capacity = capacity
        self._lock = threading.Lock()
        self._kept: OrderedDict[bytes, DecodedPod] = OrderedDict()
        self.hits = 0

    def decode(self, pod: Mapping[str, Any], key: PodKey, version: str,
               nodes: Mapping[str, NodeInfo] | None = None) -> DecodedPod:
        try:
            check_pod(pod)
        except ShapeError as exc:
            return invalid_shape(key, version, exc)
        content = content_key(pod)
        if content is not None:
            with self._lock:
                kept = self._kept.get(content)
                if kept is not None and (kept.typed_against is None
                                         or kept.typed_against is nodes):
                    self._kept.move_to_end(content)
                    self.hits += 1
                else:
                    kept = None
            if kept is not None:
                return replace(kept, key=key, resource_version=version)
        decoded = decode_pod(self._platform, pod, key, version, nodes, checked=True)
        if content is not None and decoded.error is None:
            with self._lock:
                self._kept[content] = decoded
                self._kept.move_to_end(content)
                while len(self._kept) > self._capacity:
                    self._kept.popitem(last=False)
        return decoded
