"""Replay a workload through the service's own placement path, one pod at a time.

Details: per arrival, exactly what the extender does for a pod (no second implementation)::

    snapshot  = inventory.snapshot()
    verdicts  = fit(snapshot, request, candidate rows, check_cpu_memory=True)
    ranks     = strategy.score(snapshot, request, verdicts)
    placement = place(snapshot, request, verdicts, ranks, pick=<ties: see below>)
    inventory.assume(pod, placement.assignment, cpu, memory)

``place`` (``extender.scheduling.place``) is the service's own prioritize step: a best-scoring
node, then its GPUs from the row's fit (``assign``, in the strategy's GPU order).

Method (FGD, ATC'23): the arrival sequence is the shuffled trace inflated to ``inflate`` x
capacity (``extender.simulator.inflate``); nodes enter the inventory in a seeded random order
(``rand.Perm`` in the FGD simulator); pods never leave; a pod that fits nowhere is counted
and skipped. Candidate rows of a request are the nodes with at least one GPU of an accepted
type (all nodes for a CPU-only pod): the others can never fit, so ``fit`` skips them.

Ties: the FGD simulator renames nodes ``"%04d-" % rand.Perm(n)[i] + name`` and runs a forked
kube-scheduler (``k8s.io/kubernetes => github.com/mental2008/kubernetes v1.20.5-minor``, not
readable here). The rename only matters if equal scores go to the first node in that seeded
order, and only that reproduces the published curves: FGD's truncated integer scores tie
often (every |dF| < ~0.04 GPU); with ties broken uniformly at random our FGD leaves 10.4 % of
the GPUs unallocated at 100 % arrival on the default trace (seed 42, published median 4.77 %),
with the seeded node order 4.87 % (median of seeds 42-51). ``tie_break="order"`` (default)
follows the simulator; ``"random"`` is upstream kube-scheduler's ``selectHost``.

Seeds: one ``SeedSequence(seed)`` spawns independent streams for the arrival order, the node
order, tie-breaking and the strategy's own randomness. The arrival order depends on the seed
only, so every policy sees the same pods in the same order for a given seed.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from extender.core.assign import taken_fraction
from extender.core.fit import fit
from extender.core.fragmentation.model import FragModel
from extender.core.request import PlacementRequest
from extender.core.scoring.base import PLACEMENTS, PlacementObserver, Strategy
from extender.core.workload import WorkloadMix, typical_shapes
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Inventory
from extender.model import Assignment, PodKey, RequestKind
from extender.scheduling.place import place
from extender.simulator.inflate import arrival_order
from extender.simulator.metrics import CurvePoint, Recorder
from extender.simulator.scenario import PodKind, Scenario

TIE_TOLERANCE = 1e-9

FEEDS = frozenset({PLACEMENTS})
"""What the replay feeds a strategy: every placement (``PlacementObserver.placed``)."""


@dataclass(frozen=True)
class ReplayOptions:
    policy: str | None = None
    """Registered strategy name (``None``: the platform config's, i.e. the service default)."""
    seed: int = 42
    inflate: float = 1.3
    tie_break: str = "order"
    """``order``: equal best scores go to the node that comes first in the seeded node order
    (the FGD simulator's behaviour, see the module docstring); ``random``: uniformly at
    random among them (kube-scheduler's ``selectHost``)."""


@dataclass
class ReplayResult:
    scenario: str
    policy: str
    seed: int
    inflate: float
    nodes: int
    gpus: int
    pods: int
    placed: int
    failed: int
    failed_milli: int
    curve: list[CurvePoint]
    wall_seconds: float
    used_gpus: float
    cost_per_hour: float
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    placed_by_label: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per pod label: pods placed and GPU-equivalents held on each GPU type."""
    untyped_on_protected: int = 0
    """Pods that named no GPU type placed on a type the catalog marks protected."""

    def unallocated_at(self, arrived_pct: int) -> float | None:
        for point in self.curve:
            if point.arrived_pct == arrived_pct:
                return round(point.unallocated_pct, 4)
        return None


@dataclass(eq=False)
class _Kind:
    """A pod kind resolved once: its request and the rows it may still fit on."""

    kind: PodKind
    request: PlacementRequest
    rows: npt.NDArray[np.int64]
    """Shrinks as the replay goes: pods never leave, so a node's free GPUs, CPU and memory
    only shrink, and a kind that no longer fits a node never will again (``Replay._place``
    drops it). Fitting fewer rows changes no decision: only fitting rows are scored."""


def seeds(seed: int) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator,
                              int]:
    """(arrival order, node order, tie-breaking) generators and the strategy's seed."""
    streams = np.random.SeedSequence(seed).spawn(4)
    return (np.random.default_rng(streams[0]), np.random.default_rng(streams[1]),
            np.random.default_rng(streams[2]), int(streams[3].generate_state(1)[0]))


TIE_BREAKS = ("order", "random")


def pick_best(scores: npt.NDArray[np.float64], rng: np.random.Generator | None) -> int:
    """Index of a maximal score; ties to the first (``rng is None``: candidates are in node
    order) or uniformly at random (kube-scheduler's ``selectHost``)."""
    best = float(scores.max())
    ties = np.flatnonzero(scores >= best - TIE_TOLERANCE)
    if len(ties) == 1 or rng is None:
        return int(ties[0])
    return int(ties[rng.integers(len(ties))])


class Replay:
    """One replay of a scenario under one policy and seed."""

    def __init__(self, scenario: Scenario, options: ReplayOptions) -> None:
        self.scenario = scenario
        self.options = options
        if options.tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {', '.join(TIE_BREAKS)}, got "
                             f"{options.tie_break!r}")
        order_rng, node_rng, tie_rng, strategy_seed = seeds(options.seed)
        self._tie_rng = tie_rng if options.tie_break == "random" else None
        self.order = arrival_order(scenario.pod_names, scenario.demand(),
                                   scenario.capacity_milli, options.inflate, order_rng)
        platform = scenario.platform
        slots = max((len(n.gpus) for n in scenario.nodes), default=1)
        self.inventory = Inventory(platform.catalog, gpu_slots=max(slots, 1))
        for i in node_rng.permutation(len(scenario.nodes)):
            self.inventory.upsert_node(scenario.nodes[int(i)])
        mix = WorkloadMix(prior=scenario.typical.items(),
                          memory_per_gpu=scenario.memory_per_gpu())
        self.strategy: Strategy = platform.strategy(options.policy, workload=mix,
                                                    seed=strategy_seed, feeds=FEEDS)
        self.policy = options.policy or platform.config.scoring.strategy
        self.frag_model = FragModel(platform.catalog, typical_shapes(scenario.typical))
        snapshot = self.inventory.snapshot()
        self._kinds = [self._resolve(kind, snapshot) for kind in scenario.kinds]
        self.arrival = 0
        """Index in ``order`` of the pod being placed (read by ``divergence``)."""

    def _resolve(self, kind: PodKind, snapshot: ClusterSnapshot) -> _Kind:
        request = self.scenario.platform.placement_request(
            kind.request, namespace=kind.namespace, cpu_milli=kind.cpu_milli,
            memory_mib=kind.memory_mib)
        rows = snapshot.valid_rows()
        if kind.gpu_pod:
            gpu_type = snapshot.gpu_type[rows]
            catalog = snapshot.catalog
            type_col = np.where(gpu_type >= 0, gpu_type, catalog.unknown_index)
            accepted = ((gpu_type >= 0) & request.accepted[type_col]).any(axis=1)
            rows = rows[accepted]
        return _Kind(kind, request, rows)

    def run(self, progress: Callable[[int, int], None] | None = None) -> ReplayResult:
        """``progress(done, total)``: called after every percent of the arrivals (and at the
        end), for a command to show how far a long trace is."""
        started = time.perf_counter()
        total = len(self.order)
        step = max(1, total // 100)
        scenario = self.scenario
        catalog = scenario.platform.catalog
        snapshot = self.inventory.snapshot()
        recorder = Recorder(self.frag_model, snapshot, scenario.capacity_milli)
        observer = self.strategy if isinstance(self.strategy, PlacementObserver) else None
        failures: Counter[str] = Counter()
        placed_by_label: dict[str, dict[str, float]] = {}
        placed = failed = failed_milli = untyped_on_protected = 0
        for j, k in enumerate(self.order):
            self.arrival = j
            if progress is not None and j % step == 0:
                progress(j, total)
            entry = self._kinds[int(scenario.pod_kind[int(k)])]
            kind = entry.kind
            snapshot = self.inventory.snapshot()
            self._arriving(snapshot)
            assignment = self._place(snapshot, entry) if len(entry.rows) else None
            if assignment is None:
                failed += 1
                failed_milli += kind.demand_milli
                failures[kind.request.describe() if kind.gpu_pod else "cpu-only"] += 1
                recorder.arrival(kind.demand_milli)
                continue
            self.inventory.assume(PodKey("simulated", f"pod-{j}", uid=str(j)), assignment,
                                   cpu_milli=kind.cpu_milli, memory_mib=kind.memory_mib)
            row = snapshot.node_index[assignment.node]
            gpus, type_index = self._taken(snapshot, entry, row, assignment)
            after = self.inventory.snapshot()
            recorder.node_changed(after, row)
            if observer is not None:
                observer.placed(after, entry.request, row, assignment)
            placed += 1
            label = placed_by_label.setdefault(kind.label or "all", {"pods": 0.0})
            label["pods"] += 1
            if type_index >= 0:
                type_id = catalog.id_of(type_index)
                label[type_id] = label.get(type_id, 0.0) + gpus
                if kind.request.types is None and catalog.protected[type_index]:
                    untyped_on_protected += 1
            recorder.arrival(kind.demand_milli, gpus,
                             gpus * float(catalog.price[type_index]) if type_index >= 0 else 0.0)
        if progress is not None:
            progress(total, total)
        last = int(np.ceil(self.options.inflate * 100)) if self.options.inflate > 0 else 100
        return ReplayResult(
            scenario=scenario.name, policy=self.policy, seed=self.options.seed,
            inflate=self.options.inflate, nodes=len(scenario.nodes), gpus=scenario.gpu_count,
            pods=len(self.order), placed=placed, failed=failed, failed_milli=failed_milli,
            curve=recorder.curve(last), wall_seconds=round(time.perf_counter() - started, 3),
            used_gpus=round(recorder.used_gpus, 4),
            cost_per_hour=round(recorder.cost_per_hour, 4),
            failures_by_kind=dict(failures.most_common()),
            placed_by_label={k: {t: round(v, 4) for t, v in c.items()}
                             for k, c in placed_by_label.items()},
            untyped_on_protected=untyped_on_protected)

    def _arriving(self, snapshot: ClusterSnapshot) -> None:
        """Called before each arrival (``self.arrival``) with the snapshot it will see: a
        hook for studies (``extender.simulator.stranding``); the replay itself does nothing."""

    def _place(self, snapshot: ClusterSnapshot, entry: _Kind) -> Assignment | None:
        request = entry.request
        verdict = fit(snapshot, request, entry.rows, check_cpu_memory=True)
        fits = verdict.fits
        if not fits.all():
            entry.rows = entry.rows[fits]
        if not fits.any():
            return None
        ranked = self.strategy.score(snapshot, request, verdict)
        placement = place(snapshot, request, verdict, ranked, gpus=entry.kind.gpu_pod,
                          pick=lambda scores: pick_best(scores, self._tie_rng))
        return None if placement is None else placement.assignment

    @staticmethod
    def _taken(snapshot: ClusterSnapshot, entry: _Kind, row: int,
               assignment: Assignment) -> tuple[float, int]:
        """(GPU-equivalents held, catalog type) of a placement; a fraction holds exactly its
        thousandths (its VRAM grant is rounded down to whole MiB)."""
        if not assignment.grants:
            return 0.0, -1
        catalog = snapshot.catalog
        type_index = catalog.index_of(assignment.type_id)
        request = entry.kind.request
        if request.kind is RequestKind.FRACTION:
            return request.milli / 1000.0, type_index
        return taken_fraction(snapshot, row, assignment.grants), type_index
