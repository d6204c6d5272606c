"""Which node pools could take a pod, and whether any of them hands a VRAM share or fraction to
its container (docs/handoff.md): ``/validate`` refuses, at creation, a share that only
``handoff: none`` pools could hold (on GKE no NVIDIA runtime reads the extender's handoff), with
the message filter would give later, instead of leaving the pod Pending for ever.

The nodes come from a node watch the webhook process owns (``webhook/cluster.py``; ``gpu-extender
webhook --watch-nodes``). A node could take the pod when one of its GPUs is of a type the pod
may use (accepted, not excluded, not protected from it) and it matches the pod's required node
selection (the mutating webhook's affinity included: it ran first). Nothing is refused while no
such node is known (before the first list, or a pool scaled to zero): filter still judges.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.config.types import HandoffMode
from extender.kube import objects
from extender.kube.selection import matches, selection_of
from extender.model import GpuRequest, NodeInfo
from extender.platform import Platform
from extender.scheduling.handoff import SHARE_KINDS, node_mode, share_containers

_log = logging.getLogger(__name__)
MAX_NAMED = 3
"""Nodes a refusal names (then "and N more")."""


@dataclass(frozen=True)
class _Pool:
    info: NodeInfo
    mode: HandoffMode


class NodePools:
    """The watch's sink (``ResourceSink``: ``apply``/``replace``) and the share judgement.
    Its lock is a leaf: a verdict copies the map under it and judges outside."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._handoff = platform.config.handoff
        self._nodes: dict[str, _Pool] = {}
        self._lock = threading.Lock()

    # -- ResourceSink ----------------------------------------------------------------------

    def apply(self, event: str, node: dict[str, Any]) -> None:
        name = objects.name(node)
        if event == "DELETED":
            with self._lock:
                self._nodes.pop(name, None)
            return
        pool = self._decode(node)
        with self._lock:
            if pool is None:
                self._nodes.pop(name, None)
            else:
                self._nodes[name] = pool

    def replace(self, nodes: list[dict[str, Any]]) -> dict[str, int]:
        pools = {objects.name(n): p for n in nodes if (p := self._decode(n)) is not None}
        with self._lock:
            self._nodes = pools
        return {}

    def _decode(self, node: Mapping[str, Any]) -> _Pool | None:
        try:
            info = self._platform.nodes.decode(node)
        except Exception as exc:  # one bad node must not stop a list (as sync/apply.py)
            _log.warning("node not understood", extra={"fields": {
                "node": objects.name(node), "error": str(exc)}})
            return None
        if not info.gpus:
            return None
        return _Pool(info, node_mode(self._handoff, info.labels))

    # -- the judgement ---------------------------------------------------------------------

    def share_refusal(self, request: GpuRequest, pod: Mapping[str, Any],
                      namespace: str) -> str | None:
        """The refusal of a share pod that only ``none`` pools could take, else ``None``."""
        if request.kind not in SHARE_KINDS:
            return None
        with self._lock:
            pools = list(self._nodes.values())
        placement = self._platform.placement_request(
            request, namespace=namespace, nodes={p.info.name: p.info for p in pools})
        selection = selection_of(pod.get("spec") or {})
        could = [p for p in pools
                 if any(placement.allowed[g.type_index] for g in p.info.gpus) and
                 matches(selection, p.info.name, p.info.labels)]
        if not could or any(p.mode is not HandoffMode.NONE for p in could):
            return None
        names = sorted(p.info.name for p in could)
        named = ", ".join(names[:MAX_NAMED]) + \
            (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
        catalog = self._platform.catalog
        types = catalog.describe(sorted({g.type_index for p in could for g in p.info.gpus
                                         if placement.allowed[g.type_index]}))
        containers = share_containers(self._platform.pods, pod)
        where = f"spec.containers[{containers[0]}].resources" if containers else \
            "metadata.annotations"
        asked = f" ({request.type_source})" if request.type_source else ""
        return (f"gpu-extender: {where}: {request.describe()} on {types}{asked} can reach "
                f"its container on none of the nodes that could hold it ({len(names)} node(s) "
                f"with handoff: none: {named}; on GKE no NVIDIA runtime reads a share's GPU); "
                f"accepted: nvidia.com/gpu: 1 on a time-sharing pool, or a GPU type whose pool "
                f"hands shares over (handoff cdi or env, e.g. node label "
                f"{self._handoff.node_label}=cdi where the GPU Operator runs NRI)")
