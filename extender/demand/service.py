"""The controller's object graph: the view (``DemandView`` fed by ``ClusterSync`` watches, or
once from lists), the extender's own scheduling core to judge pods on it, the reconciler, the
event writer, and the loop. Each thread is owned here: ``start`` / ``stop``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from extender.apiserver.client import ApiServerClient
from extender.apiserver.demand_objects import DemandObjectApi
from extender.apiserver.events import EventQueue
from extender.config.demand import DemandConfig
from extender.demand.controller import DemandLoop, Reconciler, Report
from extender.demand.emit import Emitter
from extender.demand.judge import judging_scheduler
from extender.demand.metrics import DemandMetrics
from extender.demand.view import DemandView
from extender.inventory.store import Inventory
from extender.kube import objects
from extender.platform import Platform
from extender.runtime.listener import PROMETHEUS, Route, health_route
from extender.sync.cluster import ClusterSync
from extender.sync.leader import LeaderLease


class DemandService:
    def __init__(self, platform: Platform, config: DemandConfig, api: ApiServerClient,
                 objects: DemandObjectApi, *, namespace: str, schedulers: Collection[str],
                 scheduler_name: str, interval_s: float = 5.0,
                 leader: LeaderLease | None = None, watch_timeout_seconds: int = 300) -> None:
        self.api = api
        self.inventory = Inventory(platform.catalog)
        self.view = DemandView(platform, self.inventory)
        self.metrics = DemandMetrics()
        scheduler = judging_scheduler(platform, self.inventory, api, self.metrics)
        self.view.on_placed = scheduler.observed_placed
        self.events = EventQueue(api)
        emitter = Emitter(platform, config, namespace=namespace, scheduler_name=scheduler_name)
        self.reconciler = Reconciler(platform, config, self.view, scheduler, objects, emitter,
                                     schedulers, metrics=self.metrics, events=self.events)
        self.sync = ClusterSync(
            api, self.view, self.inventory,
            reconcile_interval_seconds=platform.config.service.reconcile_interval_seconds,
            watch_timeout_seconds=watch_timeout_seconds)
        self.loop = DemandLoop(self.reconciler, interval_s=interval_s,
                               synced=self.inventory.has_synced, leader=leader,
                               wake=self.view.utility_bound)

    def once(self, *, dry_run: bool) -> Report:
        """List nodes and pods once, reconcile once (no watch, no thread but the events')."""
        self.view.replace_nodes(self.api.list_objects("nodes").items)
        self.view.replace_pods(self.api.list_objects("pods").items)
        self.inventory.mark_synced()
        if dry_run:
            return self.reconciler.reconcile(dry_run=True)
        self.events.start()
        try:
            return self.reconciler.reconcile()
        finally:
            self.events.stop()

    def start(self) -> None:
        self.events.start()
        self.sync.start()
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()
        self.sync.stop()
        self.events.stop()

    def routes(self) -> dict[str, Route]:
        """``/metrics``, ``/healthz`` (the loop and the watches are alive), ``/readyz`` (the
        first lists are applied)."""
        def healthy() -> str | None:
            if not self.loop.running():
                return "reconcile loop stopped"
            return None if self.sync.running() else "watches not running"

        def metrics() -> tuple[int, bytes, str]:
            return 200, self.metrics.exposition(), PROMETHEUS

        return {"/metrics": metrics, "/healthz": health_route(healthy),
                "/readyz": health_route(lambda: None if self.inventory.has_synced()
                                        else "not synced", ok="ready")}


def report_json(report: Report) -> dict[str, Any]:
    """``--once``'s report as JSON: pods by outcome, the plan, the actions."""
    return {
        "pods": [{"pod": f"{objects.namespace(w.pod)}/{objects.name(w.pod)}",
                  "waiting": w.waiting.value, **({"why": w.why} if w.why else {})}
                 for w in report.waits if w.waiting.value != "not-ours"],
        "plan": [{"type": n.type_id, "gpusPerNode": n.gpus, "gpusUsed": n.gpus_used,
                  "pods": list(n.pods)} for n in report.plan.nodes],
        "unserved": [{"pod": pod, "why": why} for pod, why in report.plan.unserved],
        "actions": [{"action": a.rule.value, "kind": a.kind.value, "name": a.name,
                     "type": a.type_id} for a in report.actions],
        "errors": list(report.errors),
        "dryRun": report.dry_run,
        **({"objects": [dict(o.body) for o in report.wanted]} if report.dry_run else {}),
    }
