"""``KubeViewApplier``: the extender's inventory applier that also keeps kube-scheduler's view
of the same objects (``KubeNodes``: nodes and the bound pods' requests, as its filters read
them), fed by the same events and relists. The read-only processes that judge a pod as
kube-scheduler with the extender would (the shadow, the demand controller) subclass it; the
serving extender needs no kube view (kube-scheduler runs its filters itself).

A subclass that must see an event before it is counted (the shadow judges a bind as the other
scheduler saw the cluster) does its work first, then calls ``super().pod_event``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.inventory.store import Inventory
from extender.kube.filters.nodes import KubeNodes
from extender.model import PodInfo
from extender.platform import Platform
from extender.sync.apply import DELETED, InventoryApplier


class KubeViewApplier(InventoryApplier):
    def __init__(self, platform: Platform, inventory: Inventory, *,
                 ignored: Iterable[str],
                 on_placed: Callable[[PodInfo], None] | None = None) -> None:
        """``ignored``: the extended resources ``NodeResourcesFit`` skips
        (``scheduling.verdict.ignored_resources()`` under the shipped configs); ``on_placed``:
        ``InventoryApplier``'s."""
        super().__init__(platform, inventory, on_placed=on_placed)
        self.kube = KubeNodes(ignored=ignored)
        """Nodes and bound pods as kube-scheduler's filters read them."""

    def node_event(self, event_type: str, node: Mapping[str, Any]) -> None:
        self.kube.node_event(event_type == DELETED, node)
        super().node_event(event_type, node)

    def replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        nodes = list(nodes)
        self.kube.replace_nodes(nodes)
        return super().replace_nodes(nodes)

    def pod_event(self, event_type: str, pod: Mapping[str, Any]) -> None:
        self.kube.pod_event(event_type == DELETED, pod)
        super().pod_event(event_type, pod)

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        pods = list(pods)
        self.kube.replace_pods(pods)
        return super().replace_pods(pods)
