"""The service's object graph, built once per worker process (after gunicorn forks).

Two ways in: ``online`` (an API server: watches feed the inventory, the binder writes to the
API) and ``offline`` (a cluster file: ``OfflineCluster`` stands in for the API). Everything
between the wire and the inventory is the same code in both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from extender.apiserver.binder import Binder
from extender.apiserver.client import ClaimReader, KubeApi, NodeStatusWriter, PodWriter
from extender.apiserver.events import EventPacing, EventQueue
from extender.core.scoring.scored_memo import ScoredMemo
from extender.core.workload import WorkloadMix
from extender.inventory.store import Inventory
from extender.platform import Platform
from extender.scheduling.preempt import Preempt
from extender.scheduling.scheduler import Scheduler
from extender.server.metrics import ExtenderMetrics
from extender.server.preempt_verb import PreemptVerb
from extender.server.verbs import SchedulingVerbs
from extender.sync.apply import InventoryApplier
from extender.sync.cluster import ClusterSync
from extender.sync.dra import DraState
from extender.sync.node_capacity import CapacityPublisher
from extender.sync.node_warnings import NodeWarnings
from extender.sync.offline import ClusterObjects, OfflineCluster
from extender.sync.score_facts import ScoreFacts

_log = logging.getLogger(__name__)


class ExtenderService:
    def __init__(self, platform: Platform, api: PodWriter, *,
                 inventory: Inventory | None = None, applier: InventoryApplier | None = None,
                 on_new_pod: Callable[[Mapping[str, Any]], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 event_queue: EventQueue | None = None,
                 claims: ClaimReader | None = None,
                 facts: ScoreFacts | None = None) -> None:
        """``facts``: the exact cut's cluster facts, fed by the watches (online).
        ``clock`` drives reservation TTLs (tests pass a fake one); ``event_queue``: the
        writer of events, started and stopped with the service (online); ``claims`` reads DRA
        claims at bind (online only)."""
        config = platform.config.service
        self.platform = platform
        self.api = api
        self.inventory = inventory or Inventory(platform.catalog, clock=clock)
        self.applier = applier or InventoryApplier(platform, self.inventory)
        self.workload = WorkloadMix()
        self.metrics = ExtenderMetrics()
        self.binder = Binder(api, events=event_queue,
                             placement_events=config.placement_events)
        self.scheduler = Scheduler(platform, self.inventory, self.workload, api, self.metrics,
                                   reservation_ttl=config.reservation_ttl_seconds,
                                   check_cpu_memory=config.check_cpu_memory,
                                   on_new_pod=on_new_pod, clock=clock,
                                   binder=self.binder, claims=claims,
                                   cut_facts=facts)
        self.event_queue = event_queue
        self.facts = facts
        self.applier.on_placed = self.scheduler.observed_placed
        self.verbs = SchedulingVerbs(platform, self.scheduler, self.metrics)
        self.preempt = PreemptVerb(Preempt(self.inventory, self.scheduler.cycles,
                                           self.applier.pod_facts,
                                           check_cpu_memory=config.check_cpu_memory),
                                   self.metrics, before=self.scheduler.holds.run)
        self.offline: OfflineCluster | None = None
        self.sync: ClusterSync | None = None
        self.capacity: CapacityPublisher | None = None
        self._offline_objects: ClusterObjects | None = None
        self._stoppers: list[Callable[[], None]] = []
        self._when_synced: list[Callable[[], None]] = []
        self.metrics.attach_inventory(self.inventory, extra=self._counters,
                                      gpu_series=config.gpu_series)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def online(cls, platform: Platform, client: KubeApi, *,
               watch_timeout_seconds: int = 300,
               publish_capacity: NodeStatusWriter | None = None,
               leader: Callable[[], bool] | None = None) -> ExtenderService:
        """``publish_capacity``: write the share capacity into node status while ``leader()``
        says this replica leads (``sync/leader.py``)."""
        inventory = Inventory(platform.catalog)
        facts = ScoreFacts()
        service = cls(platform, client, inventory=inventory, applier=InventoryApplier(
            platform, inventory, on_node_problems=NodeWarnings(client),
            dra=DraState(platform.catalog)), event_queue=EventQueue(client, pacing=EventPacing(
                qps=platform.config.service.event_qps,
                burst=platform.config.service.event_burst)), claims=client,
            facts=facts)
        service.sync = ClusterSync(
            client, service.applier, service.inventory,
            reconcile_interval_seconds=platform.config.service.reconcile_interval_seconds,
            watch_timeout_seconds=watch_timeout_seconds,
            on_restart=service.metrics.watch_restart, on_repairs=service.metrics.repairs,
            on_synced=service._synced, facts=facts)
        if publish_capacity is not None:
            service.capacity = CapacityPublisher(inventory, publish_capacity, leader=leader)
        return service

    @classmethod
    def from_cluster_objects(cls, platform: Platform, objects: ClusterObjects
                             ) -> ExtenderService:
        inventory = Inventory(platform.catalog)
        applier = InventoryApplier(platform, inventory)
        offline = OfflineCluster(applier, inventory)
        service = cls(platform, offline, inventory=inventory, applier=applier,
                      on_new_pod=offline.admit)
        service.offline = offline
        service._offline_objects = objects
        return service

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Online: start the watches (ready after the first lists). Offline: load the file
        (ready when this returns)."""
        if self.event_queue is not None:
            self.event_queue.start()
            self._stoppers.append(self.event_queue.stop)  # stopped last: binds may still end
        if self.sync is not None:
            self.sync.start()
            self._stoppers.append(self.sync.stop)
        if self.capacity is not None:
            self.capacity.start()
            self._stoppers.append(self.capacity.stop)
        if self.offline is not None and self._offline_objects is not None:
            objects, self._offline_objects = self._offline_objects, None
            self.offline.load(objects)
            _log.info("offline cluster loaded", extra={"fields": {
                "nodes": len(objects.nodes), "pods": len(objects.pods),
                "holdings": len(self.inventory.holdings())}})
            self._synced()

    def when_synced(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the first full sync is done (online: from the watch
        thread; offline: from ``start``). Register before ``start``."""
        self._when_synced.append(callback)

    def _synced(self) -> None:
        for callback in self._when_synced:
            callback()

    def stop(self) -> None:
        while self._stoppers:
            self._stoppers.pop()()

    def ready(self) -> bool:
        """Synced, and (online) both watches still running: a watch whose relists fail every
        time leaves the books frozen, which must not read as ready."""
        return self.inventory.has_synced() and (self.sync is None or self.sync.running())

    def find_pod(self, namespace: str, name: str) -> dict[str, Any]:
        """The pod as the API (or the offline file) has it; raises ``KubeError``."""
        return self.api.get_pod(namespace, name)

    def _counters(self) -> dict[str, float]:
        counters = {"inferred_pods": float(self.applier.inferred_total),
                    "inference_failures": float(self.applier.inference_failures_total),
                    "untrusted_assignments": float(self.applier.untrusted_total),
                    "objects_not_applied": float(self.applier.bad_objects_total),
                    "fit_cache_hits": float(self.verbs.fit_cache_hits),
                    "rows_memo_hits": float(self.scheduler.evaluator.rows.hits),
                    "evaluations_taken_ahead": float(self.scheduler.evaluator.taken_ahead),
                    "node_lists_reused": float(self.verbs.filter_args.reused),
                    "decode_memo_hits": float(self.scheduler.cycles.decoded.hits),
                    "watch_decode_memo_hits": float(self.applier.decoded.hits),
                    "rows_warmed": float(self.scheduler.warm.runs),
                    "scores_ahead": float(self.scheduler.scorer.speculated),
                    "scores_taken_ahead": float(self.scheduler.scorer.taken_ahead),
                    "scores_ahead_skipped": float(self.scheduler.scorer.pace.skipped),
                    "holds_after_answer": float(self.scheduler.holds.after_answer),
                    "holds_before_verb": float(self.scheduler.holds.before_verb),
                    "binding_echoes_read": float(self.applier.unbound.hits),
                    "status_reports_read": float(self.applier.seen.hits),
                    "binding_requests": float(self.binder.requests),
                    "binding_request_seconds": float(self.binder.request_seconds)}
        # rows a placement changed whose fit and kept terms were found by their content
        by_content = getattr(self.scheduler.scorer.strategy, "rows_found_by_content", 0)
        counters["rows_found_by_content"] = float(
            self.scheduler.evaluator.fits.content_hits +
            (by_content if isinstance(by_content, int) else 0))
        scored = getattr(self.scheduler.scorer.strategy, "scored", None)
        if isinstance(scored, ScoredMemo):  # explanations read from their score's arrays
            counters["explain_terms_reused"] = float(scored.hits)
        if self.event_queue is not None:
            queue = self.event_queue
            counters |= {"events_written": float(queue.written),
                         "events_aggregated": float(queue.aggregated),
                         "events_dropped": float(queue.dropped),
                         "events_failed": float(queue.failed),
                         "events_unwritten": float(queue.unwritten),
                         "events_deferred": float(queue.deferred),
                         "events_gathered": float(queue.gathered)}
        if self.sync is not None:
            for watcher in (self.sync.nodes, self.sync.pods, *self.sync.dra):
                counters[f"{watcher.kind}_events_applied"] = float(watcher.events_applied)
                counters[f"{watcher.kind}_events_failed"] = float(watcher.events_failed)
        if self.applier.dra is not None:
            counters["dra_decode_failures"] = float(self.applier.dra.state.decode_failures)
        return counters
