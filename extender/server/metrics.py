"""Prometheus metrics, in a registry owned by one app (no module-level collectors, so tests and
several apps in one process never share counts).

Hot-path counters are resolved to their labelled children once (``labels()`` is a dict lookup
plus a lock per call). Inventory gauges are computed at scrape time from a snapshot, so they
can never go stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from extender.core.reasons import VERDICT_BY_CODE, Reason
from extender.inventory.store import HoldingState, Inventory
from extender.model import Verdict

PREFIX = "gpu_extender"
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0)
VERBS = ("filter", "prioritize", "bind")


class ExtenderMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self._latency = Histogram(f"{PREFIX}_request_duration_seconds",
                                  "Time to answer one extender call, by verb.", ["verb"],
                                  buckets=LATENCY_BUCKETS, registry=r)
        self._decisions = Counter(f"{PREFIX}_decisions",
                                  "Extender calls by verb and outcome.", ["verb", "outcome"],
                                  registry=r)
        self._node_verdicts = Counter(
            f"{PREFIX}_filter_node_verdicts",
            "Per-node filter verdicts by outcome (fits, unschedulable, unresolvable) and "
            "reason code.", ["outcome", "reason"], registry=r)
        self._bind_conflicts = Counter(
            f"{PREFIX}_bind_conflicts",
            "Binds refused because the chosen node no longer had room for the pod.",
            registry=r)
        self._reservations = Counter(
            f"{PREFIX}_reservations",
            "Prioritize-time reservations by event (placed, skipped, expired).", ["event"],
            registry=r)
        self._watch_restarts = Counter(f"{PREFIX}_watch_restarts",
                                       "Watch restarts by resource and reason.",
                                       ["resource", "reason"], registry=r)
        self._repairs = Counter(f"{PREFIX}_reconcile_repairs",
                                "Drift repaired by relists, by resource and kind of repair.",
                                ["resource", "repair"], registry=r)
        self.observe_latency = {verb: self._latency.labels(verb).observe for verb in VERBS}
        reason_outcome = {code: _outcome_of(code) for code in Reason}
        self._verdict_children = {
            int(code): self._node_verdicts.labels(outcome, code.name.lower())
            for code, outcome in reason_outcome.items()}

    def decision(self, verb: str, outcome: str) -> None:
        self._decisions.labels(verb, outcome).inc()

    def node_verdicts(self, codes: np.ndarray[tuple[int], np.dtype[np.int8]]) -> None:
        """Count one filter call's per-node reason codes (one bincount, a few increments)."""
        if len(codes) == 0:
            return
        counts = np.bincount(codes.astype(np.int64), minlength=len(VERDICT_BY_CODE))
        for code in np.flatnonzero(counts).tolist():
            child = self._verdict_children.get(code)
            if child is not None:
                child.inc(int(counts[code]))

    def bind_conflict(self) -> None:
        self._bind_conflicts.inc()

    def reservation(self, event: str, count: int = 1) -> None:
        if count:
            self._reservations.labels(event).inc(count)

    def watch_restart(self, resource: str, reason: str) -> None:
        self._watch_restarts.labels(resource, reason).inc()

    def repairs(self, resource: str, repair: str, count: int) -> None:
        self._repairs.labels(resource, repair).inc(count)

    def attach_inventory(self, inventory: Inventory, *,
                         extra: Callable[[], dict[str, float]] | None = None) -> None:
        self.registry.register(InventoryCollector(inventory, extra or dict))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _outcome_of(code: Reason) -> str:
    verdict = Verdict(int(VERDICT_BY_CODE[int(code)]))
    return {Verdict.FITS: "fits", Verdict.UNSCHEDULABLE: "unschedulable",
            Verdict.UNRESOLVABLE: "unresolvable"}[verdict]


@dataclass(eq=False)
class InventoryCollector(Collector):
    """GPUs and VRAM per type, holdings per state, read from the inventory at scrape time."""

    inventory: Inventory
    extra_counters: Callable[[], dict[str, float]]

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        snapshot = self.inventory.snapshot()
        catalog = snapshot.catalog
        valid = snapshot.node_valid[:, None] & snapshot.present
        types = snapshot.gpu_type[valid].astype(np.int64)
        n_types = len(catalog) + 1
        total = np.bincount(types, minlength=n_types)
        allocated = np.bincount(types, weights=snapshot.pods[valid] > 0, minlength=n_types)
        vram_free = np.bincount(types, weights=np.maximum(snapshot.free_mib[valid], 0),
                                minlength=n_types)
        vram_total = np.bincount(types, weights=snapshot.total_mib[valid], minlength=n_types)
        gpus = GaugeMetricFamily(f"{PREFIX}_gpus", "GPUs in the inventory by type and state "
                                 "(allocated: at least one pod holds part of it).",
                                 labels=["type", "state"])
        free = GaugeMetricFamily(f"{PREFIX}_vram_free_mib", "Unreserved VRAM by GPU type.",
                                 labels=["type"])
        capacity = GaugeMetricFamily(f"{PREFIX}_vram_total_mib", "VRAM by GPU type.",
                                     labels=["type"])
        for t in np.flatnonzero(total).tolist():
            name = catalog.id_of(t)
            gpus.add_metric([name, "total"], float(total[t]))
            gpus.add_metric([name, "allocated"], float(allocated[t]))
            free.add_metric([name], float(vram_free[t]))
            capacity.add_metric([name], float(vram_total[t]))
        yield gpus
        yield free
        yield capacity
        nodes = GaugeMetricFamily(f"{PREFIX}_nodes", "Nodes in the inventory.")
        nodes.add_metric([], float(snapshot.node_valid.sum()))
        yield nodes
        holdings = GaugeMetricFamily(f"{PREFIX}_holdings", "Pod holdings by state.",
                                     labels=["state"])
        counts = dict.fromkeys(HoldingState, 0)
        for holding in self.inventory.holdings():
            counts[holding.state] += 1
        for state, count in counts.items():
            holdings.add_metric([state.value], float(count))
        yield holdings
        synced = GaugeMetricFamily(f"{PREFIX}_inventory_synced",
                                   "1 once the first full list of nodes and pods is applied.")
        synced.add_metric([], 1.0 if self.inventory.has_synced() else 0.0)
        yield synced
        conflicts = CounterMetricFamily(f"{PREFIX}_inventory_conflicts",
                                        "Observed holdings that over-commit a GPU.")
        conflicts.add_metric([], float(self.inventory.conflicts_total))
        yield conflicts
        for name, value in self.extra_counters().items():
            family = CounterMetricFamily(f"{PREFIX}_{name}", name.replace("_", " "))
            family.add_metric([], value)
            yield family
