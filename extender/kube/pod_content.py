"""A pod's content as its decode reads it, and the watch's decode memoized on it.

The pods of a burst (a Deployment's replicas, a Job's workers) differ only in their identity
(name, UID, resourceVersion, the token volume's random name), so once one of them is decoded
the next is a dictionary lookup. ``content_key`` encodes exactly what ``PodDecoder.decode``
and ``scheduling.pods.decode_pod`` read besides the identity: the namespace, labels,
annotations, ``status.phase``, the parts of ``spec`` listed in ``SPEC_READ`` and of each
container in ``CONTAINER_READ`` (``tests/scheduling/test_pod_memo.py`` runs the decode on a pod
that records every field read and fails on one outside the key). The platform the decoders
read is fixed for the process.

``PodInfoMemo`` is the pod watch's decode (``sync/apply.py``): every pending pod of a burst
arrives as an ADDED event and was decoded in full (issue 22: ~0.1 ms of the watch's work per
2.6 KB replica; a lookup, its shape check included, is about half that);
``scheduling/pod_memo.py`` does the same for the verbs' decode.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Generic, TypeVar

import orjson

from extender.kube import objects
from extender.kube.decode_pod import PodDecoder
from extender.kube.shape import ShapeError, check_pod
from extender.model import PodInfo

SPEC_READ = ("nodeName", "nodeSelector", "affinity", "overhead")
"""The fields of ``spec`` the decode reads, besides its containers' and init containers'."""
CONTAINER_READ = ("name", "restartPolicy", "resources")
"""The fields of a container the decode reads."""
DEFAULT_CAPACITY = 256
"""Distinct pod contents kept (least recently used go); each is a few hundred bytes."""


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


T = TypeVar("T")


class ByContent(Generic[T]):
    """The values of the last ``capacity`` distinct content keys (least recently used go).
    Thread-safe; ``hits`` counts the values found and usable."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._kept: OrderedDict[bytes, T] = OrderedDict()
        self.hits = 0

    def get(self, content: bytes, usable: Callable[[T], bool] = lambda _: True) -> T | None:
        """The value kept for ``content`` if ``usable`` says it still holds, else ``None``."""
        with self._lock:
            kept = self._kept.get(content)
            if kept is None or not usable(kept):
                return None
            self._kept.move_to_end(content)
            self.hits += 1
            return kept

    def put(self, content: bytes, value: T) -> None:
        with self._lock:
            self._kept[content] = value
            self._kept.move_to_end(content)
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)


class PodInfoMemo:
    """``decode`` is ``PodDecoder.decode`` with the decodes of the last ``capacity`` distinct
    pod contents kept, re-keyed on a hit. A decode with problems is not kept (rare, and its
    pod is worth reading again). Thread-safe; ``hits`` counts the decodes it saved."""

    def __init__(self, decoder: PodDecoder, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._decoder = decoder
        self._kept: ByContent[PodInfo] = ByContent(capacity)

    @property
    def hits(self) -> int:
        return self._kept.hits

    def decode(self, pod: Mapping[str, Any]) -> PodInfo:
        try:
            check_pod(pod)
        except ShapeError:
            return self._decoder.decode(pod)  # which reports the problem, with its path
        content = content_key(pod)
        kept = self._kept.get(content) if content is not None else None
        if kept is not None:
            return replace(kept, key=objects.pod_key(pod))
        info = self._decoder.decode(pod, checked=True)
        if content is not None and not info.problems:
            self._kept.put(content, info)
        return info
