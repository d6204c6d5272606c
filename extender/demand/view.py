"""The controller's view of the cluster: the extender's own inventory (same decode, same
holdings), kube-scheduler's filters' view of nodes and bound pods (``KubeNodes``, kept by
``sync.kube_view.KubeViewApplier`` as for the shadow), and which pods exist and whether they
are bound.

Demand objects of our own (utility pods, label ``gpu-extender.io/demand``) are kept apart and
never counted: a bound utility pod holds the GPU of a new node only until the controller
deletes it, and the real pods must be judged as if it were already gone (else the node it
brought would look full, and its demand would be asked for again).

Fed by a watch (``ClusterSync``) or once from lists (``--once``); read by the reconcile loop's
thread (``state`` copies under the lock).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.demand.labels import is_demand
from extender.inventory.store import Inventory
from extender.kube import objects
from extender.platform import Platform
from extender.scheduling.verdict import ignored_resources
from extender.sync.apply import DELETED
from extender.sync.kube_view import KubeViewApplier


@dataclass(frozen=True)
class PodsState:
    unbound: tuple[Mapping[str, Any], ...]
    """Pods not bound to a node, demand pods excluded."""
    bound: frozenset[str]
    """``namespace/name`` of bound pods (demand pods excluded)."""
    present: frozenset[str]
    """``namespace/name`` of every pod that exists (demand pods excluded)."""
    utility: tuple[Mapping[str, Any], ...]
    """Our own utility pods."""


class DemandView(KubeViewApplier):
    def __init__(self, platform: Platform, inventory: Inventory) -> None:
        super().__init__(platform, inventory, ignored=ignored_resources())
        self._pods_lock = threading.Lock()
        self._pods: dict[str, Mapping[str, Any]] = {}
        """``namespace/name`` -> the latest object of every non-demand pod."""
        self._utility: dict[str, Mapping[str, Any]] = {}
        self.utility_bound = threading.Event()
        """Set when a utility pod of ours is seen bound: the loop deletes it without waiting
        for its next round."""

    # -- pods (nodes: ``KubeViewApplier``'s) -----------------------------------------------

    def pod_event(self, event_type: str, pod: Mapping[str, Any]) -> None:
        key = str(objects.pod_key(pod))
        deleted = event_type == DELETED
        with self._pods_lock:
            target = self._utility if is_demand(pod) else self._pods
            if deleted:
                target.pop(key, None)
            else:
                target[key] = pod
        if is_demand(pod):
            if not deleted and objects.node_name(pod):
                self.utility_bound.set()
            return
        super().pod_event(event_type, pod)

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        ours: dict[str, Mapping[str, Any]] = {}
        theirs: dict[str, Mapping[str, Any]] = {}
        for pod in pods:
            (ours if is_demand(pod) else theirs)[str(objects.pod_key(pod))] = pod
        with self._pods_lock:
            self._pods, self._utility = theirs, ours
        return super().replace_pods(theirs.values())

    def state(self) -> PodsState:
        with self._pods_lock:
            pods = list(self._pods.items())
            utility = tuple(self._utility.values())
        bound = frozenset(k for k, p in pods if objects.node_name(p))
        return PodsState(unbound=tuple(p for _, p in pods if not objects.node_name(p)),
                         bound=bound, present=frozenset(k for k, _ in pods), utility=utility)
