"""A pod as one scheduling cycle sees it: decoded once, its GPU request resolved once.

``decode_pod`` runs the platform's ``PodDecoder`` once and resolves the ``PlacementRequest``
(type masks, protection) once; an invalid request keeps the decoder's own message, so nothing
is decoded a second time to recover it. The pod's key is built once, here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.core.request import PlacementRequest
from extender.kube import objects
from extender.kube.shape import ShapeError, check_pod
from extender.model import ASSIGNMENT_ANNOTATIONS, GpuRequest, NodeInfo, PodKey
from extender.platform import Platform
from extender.scheduling.handoff import SHARE_KINDS, share_containers

_ANNOTATION_PROBLEMS = tuple(f"metadata.annotations[{a}]" for a in ASSIGNMENT_ANNOTATIONS)
"""Problems of our annotations (``assigned`` and the agent's ``assigned-observed``): on a pod
that asks for no GPU they are not its request's fault (``/validate`` admits such a pod too)."""


@dataclass(frozen=True, eq=False)
class DecodedPod:
    key: PodKey
    resource_version: str
    request: GpuRequest | None
    """``None``: the pod asks for no GPU (or its request is invalid, see ``error``)."""
    placement: PlacementRequest | None
    """The request resolved against the catalog and protection; ``None`` with ``request``."""
    error: str | None
    """Why the GPU request is invalid (``None`` when it is fine)."""
    cpu_milli: int
    memory_mib: int
    node_name: str
    typed_against: Mapping[str, NodeInfo] | None = None
    """The inventory node map a selection-typed placement was resolved against (a pod whose
    required node selection reaches only protected types is typed by it, see
    ``kube/selection.py``); ``None``: not typed by its selection."""
    share_containers: tuple[str, ...] = ()
    """A VRAM share or fraction: the containers that hold it (the CDI handoff names them)."""


pod_key = objects.pod_key
resource_version = objects.resource_version


def invalid_shape(key: PodKey, version: str, problem: ShapeError) -> DecodedPod:
    """A pod whose shape check failed: its request is invalid, with the field's path."""
    return DecodedPod(key, version, None, None, f"invalid GPU request: {problem}", 0, 0, "")


def decode_pod(platform: Platform, pod: Mapping[str, Any], key: PodKey,
               version: str, nodes: Mapping[str, NodeInfo] | None = None, *,
               checked: bool = False) -> DecodedPod:
    """Decode ``pod`` (whose ``key`` and ``version`` the caller already read); ``nodes``, the
    inventory's node map, types a pod by its node selection.

    The pod's shape is checked first (``kube.shape``; ``checked``: the caller did): a part of
    the wrong JSON type makes the request invalid with the field's path, before any decoder or
    learned state sees it."""
    if not checked:
        try:
            check_pod(pod)
        except ShapeError as exc:
            return invalid_shape(key, version, exc)
    info = platform.pods.decode(pod, checked=True)
    error = None
    if info.request is None:
        # The decoder records a bad request first; a bad annotation alone (our own, on a pod
        # that asks for no GPU) is not the request's fault.
        request_problems = [p for p in info.problems if not p.startswith(_ANNOTATION_PROBLEMS)]
        if request_problems:
            error = f"invalid GPU request: {request_problems[0]}"
    placement = None
    if info.request is not None:
        placement = platform.placement_request(
            info.request, namespace=key.namespace, cpu_milli=info.cpu_milli,
            memory_mib=info.memory_mib, nodes=nodes)
    typed_against = nodes if info.request is not None and \
        info.request.selection is not None else None
    holders = share_containers(platform.pods, pod) \
        if info.request is not None and info.request.kind in SHARE_KINDS else ()
    return DecodedPod(key, version, info.request, placement, error, info.cpu_milli,
                      info.memory_mib, info.node_name, typed_against, holders)


def retyped(platform: Platform, decoded: DecodedPod,
            nodes: Mapping[str, NodeInfo]) -> DecodedPod:
    """``decoded`` with its selection typing re-resolved if the inventory's nodes changed (the
    typing itself is cached per distinct selection, so this is cheap)."""
    if decoded.request is None or decoded.request.selection is None or \
            nodes is decoded.typed_against:
        return decoded
    placement = platform.placement_request(
        decoded.request, namespace=decoded.key.namespace, cpu_milli=decoded.cpu_milli,
        memory_mib=decoded.memory_mib, nodes=nodes)
    return replace(decoded, placement=placement, typed_against=nodes)
