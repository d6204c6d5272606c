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
from extender.core.rowops import flat_nonzero
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import HoldingState, Inventory
from extender.kube.score_inert import CutReason
from extender.model import Verdict
from extender.server.gpu_series import GpuSeries
from extender.server.thread_cpu import ThreadCpuCollector

PREFIX = "gpu_extender"
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0)
VERBS = ("filter", "prioritize", "bind", "preempt")


class ExtenderMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self._gpus: tuple[Inventory, GpuSeries] | None = None
        """The inventory and its per-GPU series, once attached."""
        r = self.registry
        r.register(ThreadCpuCollector())
        self._latency = Histogram(f"{PREFIX}_request_duration_seconds",
                                  "Time to answer one extender call, by verb.", ["verb"],
                                  buckets=LATENCY_BUCKETS, registry=r)
        self._cpu = Counter(
            f"{PREFIX}_request_cpu_seconds",
            "CPU time of the thread that answered extender calls, by verb: beside "
            "request_duration_seconds' sum, the rest of a call's time is waiting (for the "
            "GIL, for a core).", ["verb"], registry=r)
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
            "Tentative reservations (prioritize's, or filter's when it answers one node) by event "
            "(placed, skipped, expired).", ["event"],
            registry=r)
        self._strategy_failures = Counter(
            f"{PREFIX}_strategy_failures",
            "Prioritize calls whose scoring strategy raised and fell back to the default order.",
            registry=r)
        self._watch_restarts = Counter(f"{PREFIX}_watch_restarts",
                                       "Watch restarts by resource and reason.",
                                       ["resource", "reason"], registry=r)
        self._repairs = Counter(f"{PREFIX}_reconcile_repairs",
                                "Drift repaired by relists, by resource and kind of repair.",
                                ["resource", "repair"], registry=r)
        self._preemption_nodes = Counter(
            f"{PREFIX}_preemption_nodes",
            "Candidate nodes of preempt calls by outcome (victims, or why dropped: never, "
            "insufficient, fits, unknown_node).", ["outcome"], registry=r)
        self._preemption_victims = Counter(
            f"{PREFIX}_preemption_victims", "Victims named by preempt answers (divided by "
            "preemption_nodes{outcome=\"victims\"}: victims per preempted node).", registry=r)
        self._score_cut = Counter(
            f"{PREFIX}_score_cut", "Filter answers with a node passing, by the exact cut's "
            "verdict: cut, or why not (docs/score-cut.md).", ["reason"], registry=r)
        self._score_cut_nodes = Counter(
            f"{PREFIX}_score_cut_nodes", "Feasible nodes of filter answers by fate (kept, "
            "dropped by the exact cut).", ["fate"], registry=r)
        self._cut_children = {reason: self._score_cut.labels(reason.value)
                              for reason in CutReason}
        self._cut_kept = self._score_cut_nodes.labels("kept")
        self._cut_dropped = self._score_cut_nodes.labels("dropped")
        self.observe_latency = {verb: self._latency.labels(verb).observe for verb in VERBS}
        self.add_cpu = {verb: self._cpu.labels(verb).inc for verb in VERBS}
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
        for code in flat_nonzero(counts).tolist():
            child = self._verdict_children.get(code)
            if child is not None:
                child.inc(int(counts[code]))

    def preemption_node(self, outcome: str, victims: int) -> None:
        self._preemption_nodes.labels(outcome).inc()
        if victims:
            self._preemption_victims.inc(victims)

    def score_cut(self, reason: CutReason, kept: int, dropped: int) -> None:
        self._cut_children[reason].inc()
        self._cut_kept.inc(kept)
        if dropped:
            self._cut_dropped.inc(dropped)

    def bind_conflict(self) -> None:
        self._bind_conflicts.inc()

    def reservation(self, event: str, count: int = 1) -> None:
        if count:
            self._reservations.labels(event).inc(count)

    def strategy_failure(self) -> None:
        self._strategy_failures.inc()

    def watch_restart(self, resource: str, reason: str) -> None:
        self._watch_restarts.labels(resource, reason).inc()

    def repairs(self, resource: str, repair: str, count: int) -> None:
        self._repairs.labels(resource, repair).inc(count)

    def attach_inventory(self, inventory: Inventory, *,
                         extra: Callable[[], dict[str, float]] | None = None,
                         gpu_series: bool = True) -> None:
        """``gpu_series``: also serve the per-GPU series (``service.gpuSeries``)."""
        self.registry.register(InventoryCollector(inventory, extra or dict))
        if gpu_series:
            self._gpus = (inventory, GpuSeries())

    def exposition(self) -> bytes:
        """The registry's families, then the per-GPU ones (``server/gpu_series.py``: kept
        row by row across scrapes)."""
        text = generate_latest(self.registry)
        if self._gpus is None:
            return text
        inventory, series = self._gpus
        return text + series.exposition(inventory.snapshot())


def _outcome_of(code: Reason) -> str:
    verdict = Verdict(int(VERDICT_BY_CODE[int(code)]))
    return {Verdict.FITS: "fits", Verdict.UNSCHEDULABLE: "unschedulable",
            Verdict.UNRESOLVABLE: "unresolvable"}[verdict]


# Per-GPU series carry dcgm-exporter's label names (as the node agent's do: docs/agent.md), so
# dashboards join the extender's books, the agent's measurements and DCGM's utilisation on
# (Hostname, gpu). modelName is the catalog id here (t4, a100-80gb), not NVML's product name.
TYPE_LABEL = "modelName"


@dataclass(eq=False)
class InventoryCollector(Collector):
    """The inventory at scrape time: GPUs per type, nodes, DRA, holdings per state (the
    per-GPU series are ``GpuSeries``'). One metric per quantity (totals and parts are separate
    metrics)."""

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
        gpus = GaugeMetricFamily(f"{PREFIX}_gpus", "GPUs in the inventory, by type.",
                                 labels=[TYPE_LABEL])
        gpus_allocated = GaugeMetricFamily(
            f"{PREFIX}_gpus_allocated", "GPUs at least one pod holds part of, by type.",
            labels=[TYPE_LABEL])
        for t in flat_nonzero(total).tolist():
            gpus.add_metric([catalog.id_of(t)], float(total[t]))
            gpus_allocated.add_metric([catalog.id_of(t)], float(allocated[t]))
        yield gpus
        yield gpus_allocated
        nodes = GaugeMetricFamily(f"{PREFIX}_nodes", "Nodes in the inventory.")
        nodes.add_metric([], float(snapshot.node_valid.sum()))
        yield nodes
        unknown = GaugeMetricFamily(
            f"{PREFIX}_nodes_with_unknown_gpus",
            "Nodes that advertise GPUs whose type the extender cannot tell (no type label, or "
            "a product the catalog lacks): they receive no pods; their problems say why.")
        unknown.add_metric([], float((valid & (snapshot.gpu_type == catalog.unknown_index))
                                     .any(axis=1).sum()))
        yield unknown
        yield from _dra_families(snapshot, valid)
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


def _dra_families(snapshot: ClusterSnapshot,
                  valid: np.ndarray[tuple[int, int], np.dtype[np.bool_]]
                  ) -> Iterator[GaugeMetricFamily]:
    """DRA-managed nodes and their GPUs (docs/dra.md): claims hold those, not pods."""
    dra_rows = snapshot.node_dra & snapshot.node_valid
    nodes = GaugeMetricFamily(f"{PREFIX}_dra_nodes",
                              "DRA-managed nodes: their GPUs come from ResourceSlices.")
    nodes.add_metric([], float(dra_rows.sum()))
    yield nodes
    on_dra = valid & dra_rows[:, None]
    types = snapshot.gpu_type[on_dra].astype(np.int64)
    catalog = snapshot.catalog
    total = np.bincount(types, minlength=len(catalog) + 1)
    held = np.bincount(types, weights=snapshot.pods[on_dra] > 0, minlength=len(catalog) + 1)
    gpus = GaugeMetricFamily(f"{PREFIX}_dra_gpus", "GPUs of DRA-managed nodes, by type.",
                             labels=[TYPE_LABEL])
    allocated = GaugeMetricFamily(f"{PREFIX}_dra_gpus_allocated",
                                  "GPUs of DRA-managed nodes an allocated claim holds (part "
                                  "of), by type.", labels=[TYPE_LABEL])
    for t in flat_nonzero(total).tolist():
        gpus.add_metric([catalog.id_of(t)], float(total[t]))
        allocated.add_metric([catalog.id_of(t)], float(held[t]))
    yield gpus
    yield allocated


