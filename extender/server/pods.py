"""Pods as the verbs see them: decoded once per (UID, resourceVersion).

kube-scheduler sends the same pod to filter and then to prioritize, and bind only names it, so
the decoded request is kept per UID (a small LRU): prioritize and bind reuse what filter
decoded. The first time a UID is seen its shape is fed to the ``WorkloadMix``, so the default
fragmentation-aware strategy learns the request mix the cluster actually sees.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.core.request import PlacementRequest
from extender.core.workload import WorkloadMix, shape_of
from extender.errors import RequestError
from extender.model import GpuRequest, NodeInfo, PodKey
from extender.platform import Platform


@dataclass(frozen=True, eq=False)
class DecodedPod:
    key: PodKey
    resource_version: str
    request: GpuRequest | None
    """``None``: the pod asks for no GPU (or its request is invalid, see ``error``)."""
    placement: PlacementRequest | None
    error: str
    """Why the GPU request is invalid ('' when it is fine)."""
    cpu_milli: int
    memory_mib: int
    node_name: str
    typed_against: object = None
    """The inventory node map a selection-typed placement was resolved against."""


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    meta = pod.get("metadata") or {}
    return PodKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                  str(meta.get("uid") or ""))


class PodRequests:
    def __init__(self, platform: Platform, workload: WorkloadMix, *, capacity: int = 4096,
                 on_new_pod: Callable[[Mapping[str, Any]], None] | None = None,
                 nodes: Callable[[], Mapping[str, NodeInfo]] | None = None) -> None:
        self._platform = platform
        self._nodes = nodes
        """The inventory's current node map (selection typing); ``None``: not used."""
        self._workload = workload
        self._capacity = capacity
        self._on_new_pod = on_new_pod
        self._lock = threading.Lock()
        self._by_uid: OrderedDict[str, DecodedPod] = OrderedDict()

    def decode(self, pod: Mapping[str, Any], *, learn: bool = True) -> DecodedPod:
        """Decode (or reuse); ``learn=False`` (explain) leaves the cache and the workload mix
        alone."""
        key = pod_key(pod)
        version = str((pod.get("metadata") or {}).get("resourceVersion") or "")
        cache_key = key.uid or str(key)
        with self._lock:
            known = self._by_uid.get(cache_key)
            if known is not None and known.resource_version == version and known.key == key:
                self._by_uid.move_to_end(cache_key)
        if known is not None and known.resource_version == version and known.key == key:
            return self._retyped(known)
        decoded = self._retyped(self._decode(key, version, pod))
        if not learn:
            return decoded
        with self._lock:
            first_sight = cache_key not in self._by_uid
            self._by_uid[cache_key] = decoded
            self._by_uid.move_to_end(cache_key)
            while len(self._by_uid) > self._capacity:
                self._by_uid.popitem(last=False)
        if first_sight:
            if decoded.error == "":
                self._workload.observe(shape_of(decoded.request, decoded.cpu_milli),
                                       memory_mib=decoded.memory_mib)
            if self._on_new_pod is not None:
                self._on_new_pod(pod)
        return decoded

    def get(self, uid: str) -> DecodedPod | None:
        with self._lock:
            known = self._by_uid.get(uid)
        return None if known is None else self._retyped(known)

    def _retyped(self, decoded: DecodedPod) -> DecodedPod:
        """A pod typed by its node selection is re-resolved when the inventory's nodes
        changed (the typing itself is cached per distinct selection)."""
        if self._nodes is None or decoded.request is None or \
                decoded.request.selection is None:
            return decoded
        nodes = self._nodes()
        if nodes is decoded.typed_against:
            return decoded
        placement = self._platform.placement_request(
            decoded.request, namespace=decoded.key.namespace, cpu_milli=decoded.cpu_milli,
            memory_mib=decoded.memory_mib, nodes=nodes)
        return replace(decoded, placement=placement, typed_against=nodes)

    def _decode(self, key: PodKey, version: str, pod: Mapping[str, Any]) -> DecodedPod:
        info = self._platform.pods.decode(pod)
        error = ""
        if info.request is None and info.problems:
            try:
                self._platform.pods.request(pod)
            except RequestError as exc:
                error = f"invalid GPU request: {exc}"
        placement = None
        if info.request is not None:
            placement = self._platform.placement_request(
                info.request, namespace=key.namespace, cpu_milli=info.cpu_milli,
                memory_mib=info.memory_mib)
        return DecodedPod(key, version, info.request, placement, error, info.cpu_milli,
                          info.memory_mib, info.node_name)
