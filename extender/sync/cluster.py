"""Keeps the inventory equal to the cluster: a node watch, a pod watch, a reconciler.

Pods start after the first node list, so the GPUs of pods bound by another scheduler are
inferred against known nodes instead of waiting for them. The inventory is marked synced
(``/readyz``) once both first lists are applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extender.apiserver.client import DRA_KINDS, ResourceLister
from extender.inventory.store import Inventory
from extender.sync.apply import InventoryApplier
from extender.sync.reconcile import Reconciler, RepairHook
from extender.sync.score_facts import ScoreFacts
from extender.sync.watch import Backoff, ResourceSink, ResourceWatcher, RestartHook


class ClusterSync:
    def __init__(self, api: ResourceLister, applier: InventoryApplier, inventory: Inventory, *,
                 reconcile_interval_seconds: float, watch_timeout_seconds: int = 300,
                 on_restart: RestartHook | None = None, on_repairs: RepairHook | None = None,
                 on_synced: Callable[[], None] | None = None,
                 backoff_initial: float = 0.5, backoff_max: float = 30.0,
                 facts: ScoreFacts | None = None) -> None:
        """``facts``: also fed by the node and pod events, and by a Services watch (the exact
        cut's cluster facts; that watch does not gate readiness)."""
        self._inventory = inventory
        self._on_synced = on_synced or (lambda: None)
        self.reconciler = Reconciler([], reconcile_interval_seconds, on_repairs=on_repairs)
        node_sink = ResourceSink(applier.node_event, applier.replace_nodes)
        pod_sink = ResourceSink(applier.pod_event, applier.replace_pods)
        if facts is not None:
            node_sink = _also(facts.node_event, facts.replace_nodes, node_sink)
            pod_sink = _also(facts.pod_event, facts.replace_pods, pod_sink)
        self.nodes = ResourceWatcher(
            "nodes", api, node_sink,
            timeout_seconds=watch_timeout_seconds,
            backoff=Backoff(backoff_initial, backoff_max), on_restart=on_restart,
            on_relisted=self.reconciler.record, on_synced=self._maybe_synced)
        self.pods = ResourceWatcher(
            "pods", api, pod_sink,
            timeout_seconds=watch_timeout_seconds,
            backoff=Backoff(backoff_initial, backoff_max), on_restart=on_restart,
            on_relisted=self.reconciler.record, on_synced=self._maybe_synced,
            start_after=self.nodes.synced)
        self.reconciler.watch(self.nodes, self.pods)
        self.services: ResourceWatcher | None = None
        if facts is not None:
            self.services = ResourceWatcher(
                "services", api, ResourceSink(facts.service_event, facts.replace_services),
                timeout_seconds=watch_timeout_seconds,
                backoff=Backoff(backoff_initial, backoff_max), on_restart=on_restart,
                on_relisted=self.reconciler.record, start_after=self.nodes.synced)
            self.reconciler.watch(self.services)
        self.dra: tuple[ResourceWatcher, ...] = ()
        """The DRA watches (ResourceSlices, ResourceClaims, DeviceClasses), when the applier
        has a DRA sink; they start after the node list and do not gate readiness (a cluster
        without ``resource.k8s.io/v1`` only logs their retries)."""
        if applier.dra is not None:
            dra = applier.dra
            sinks = (ResourceSink(dra.slice_event, dra.replace_slices),
                     ResourceSink(dra.claim_event, dra.replace_claims),
                     ResourceSink(dra.class_event, dra.replace_classes))
            self.dra = tuple(
                ResourceWatcher(kind, api, sink, timeout_seconds=watch_timeout_seconds,
                                backoff=Backoff(backoff_initial, backoff_max),
                                on_restart=on_restart, on_relisted=self.reconciler.record,
                                start_after=self.nodes.synced)
                for kind, sink in zip(DRA_KINDS, sinks, strict=True))
            self.reconciler.watch(*self.dra)

    def start(self) -> None:
        self.nodes.start()
        self.pods.start()
        if self.services is not None:
            self.services.start()
        for watcher in self.dra:
            watcher.start()
        self.reconciler.start()

    def stop(self) -> None:
        self.reconciler.stop()
        for watcher in self.dra:
            watcher.stop()
        if self.services is not None:
            self.services.stop()
        self.pods.stop()
        self.nodes.stop()

    def running(self) -> bool:
        """Both watches are alive and their relists work (``/readyz``)."""
        return self.nodes.running() and self.pods.running()

    def _maybe_synced(self) -> None:
        if self.nodes.synced.is_set() and self.pods.synced.is_set():
            self._inventory.mark_synced()
            self._on_synced()


def _also(apply: Callable[[str, dict[str, Any]], None],
          replace: Callable[[list[dict[str, Any]]], None], sink: ResourceSink) -> ResourceSink:
    """``sink``, with ``apply`` / ``replace`` called first on the same events and lists."""
    def both_apply(event_type: str, obj: dict[str, Any]) -> None:
        apply(event_type, obj)
        sink.apply(event_type, obj)

    def both_replace(items: list[dict[str, Any]]) -> dict[str, int]:
        replace(items)
        return sink.replace(items)
    return ResourceSink(both_apply, both_replace)
