"""The inventory applier of a shadow: the same decode and holdings as the extender's, plus a
judgement of every GPU pod that another scheduler binds, taken just before the bind is applied
(so the judge sees the cluster as that scheduler did)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.core.request import PlacementRequest
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Inventory
from extender.kube import objects
from extender.model import PodInfo
from extender.platform import Platform
from extender.scheduling.verdict import ignored_resources
from extender.shadow.judge import ShadowJudge
from extender.shadow.record import ShadowRecord
from extender.sync.apply import DELETED
from extender.sync.kube_view import KubeViewApplier

MAX_REMEMBERED = 100_000


class ShadowApplier(KubeViewApplier):
    def __init__(self, platform: Platform, inventory: Inventory, judge: ShadowJudge,
                 on_record: Callable[[ShadowRecord], None], *,
                 on_placed: Callable[[PodInfo], None] | None = None) -> None:
        """``judge`` works on the same ``inventory``; ``on_placed``: ``InventoryApplier``'s (the
        scheduler's workload mix)."""
        super().__init__(platform, inventory, ignored=ignored_resources(), on_placed=on_placed)
        self._judge = judge
        self._on_record = on_record
        self._judged: set[str] = set()
        """UIDs already judged (one judgement per pod, not per watch event)."""

    # -- pods (nodes, and the kube view of both: ``KubeViewApplier``'s) ----------------------

    def pod_event(self, event_type: str, pod: Mapping[str, Any]) -> None:
        if event_type != DELETED:
            info = self._platform.pods.decode(pod)
            if self._bound_by_another(info):
                self._remember(info.key.uid)
                self._on_record(self._judge.judge(pod, info, self.kube, self.infer_on))
        super().pod_event(event_type, pod)  # counted after: judged as before its bind

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """A (re)list: pods bound before it are counted, not judged (their 'before' is
        gone)."""
        pods = list(pods)
        for pod in pods:
            uid = objects.uid(pod)
            if uid and (pod.get("spec") or {}).get("nodeName"):
                self._remember(uid)
        return super().replace_pods(pods)

    def _bound_by_another(self, info: PodInfo) -> bool:
        return bool(info.key.uid and info.request is not None and info.node_name
                    and not info.terminal and info.key.uid not in self._judged
                    and (info.assignment is None or info.assignment.node != info.node_name))

    def _remember(self, uid: str) -> None:
        if len(self._judged) >= MAX_REMEMBERED:
            self._judged.clear()  # bounded memory; a re-judged old pod is only a duplicate
        self._judged.add(uid)

    def infer_on(self, snapshot: ClusterSnapshot, info: PodInfo) -> PlacementRequest:
        assert info.request is not None
        return self._anywhere(info.request, info)
