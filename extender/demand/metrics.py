"""The controller's Prometheus metrics (its own registry, served on ``/metrics``); also the
scheduling core's ``HoldEvents`` (the judge takes no holds: those counts stay zero)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class DemandMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.objects = Gauge("gpu_extender_demand_objects",
                             "Demand objects that exist, by GPU type and kind",
                             ("type", "kind"), registry=self.registry)
        self.waiting = Gauge("gpu_extender_demand_pods_waiting",
                             "Pods that fit nowhere now and are served by demand",
                             registry=self.registry)
        self.unserved = Gauge("gpu_extender_demand_pods_unserved",
                              "Pods that fit nowhere and that no offered GPU type can hold",
                              registry=self.registry)
        self.created = Counter("gpu_extender_demand_created",
                               "Demand objects created, by kind", ("kind",),
                               registry=self.registry)
        self.deleted = Counter("gpu_extender_demand_deleted",
                               "Demand objects deleted, by why", ("reason",),
                               registry=self.registry)
        self.errors = Counter("gpu_extender_demand_reconcile_errors",
                              "Reconcile passes or API writes that failed",
                              registry=self.registry)
        self.reconciles = Counter("gpu_extender_demand_reconciles",
                                  "Reconcile passes run (as leader)", registry=self.registry)
        self._seen: set[tuple[str, str]] = set()

    def set_objects(self, counts: Iterable[tuple[str, str, int]]) -> None:
        """``(type, kind, count)`` of what exists now; absent pairs go to zero."""
        now = set()
        for type_id, kind, count in counts:
            self.objects.labels(type_id, kind).set(count)
            now.add((type_id, kind))
        for type_id, kind in self._seen - now:
            self.objects.labels(type_id, kind).set(0)
        self._seen |= now

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    # -- HoldEvents ------------------------------------------------------------------------

    def reservation(self, event: str, count: int = 1) -> None:
        """The judge holds nothing; nothing to count."""

    def strategy_failure(self) -> None:
        self.errors.inc()
