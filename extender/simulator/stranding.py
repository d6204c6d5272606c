"""Why the free GPUs are free: the unallocated capacity of a replay split by cause.

Details: at given arrived percentages (100 by default: the issue's metric point) the
``StrandingReplay`` takes the snapshot the next arrival sees and, for every node with GPUs,
asks ``fit`` about every GPU pod kind of the scenario (its own requests, so types, shares,
CPU and memory are those of the trace), twice: once on the GPUs alone and once with CPU and
memory. Each kind weighs its share of the trace's GPU pods (by count), so "usable" means
usable by the pods that arrive, not by one rare shape. With ``phi(test)`` the share of the GPU
pods whose kind passes ``test`` on the node, the node's free GPU-equivalents (1 - the used
fraction of each GPU) get one ``Cause``, the first that holds (``floor``: 0.1 by default)::

    USABLE   phi(fits, with CPU and memory) >= floor: free, not stranded
    CPU      phi(fits the free GPUs) >= floor, phi(fits the GPUs and the CPU) < floor: the
             CPU left beside the free GPUs is what most pods lack
    MEMORY   phi(fits the GPUs and the CPU) >= floor, but not with memory
    PARTIAL  phi(fits the free GPUs) < floor: the slices of partly used GPUs (a share's
             leftover, MIG slices or time-slice replicas too small for most kinds)
    WHOLE    phi(fits the free GPUs) < floor: the whole free GPUs (a type few kinds accept,
             or too few for the multi-GPU kinds)

A node with both whole and partial free GPUs and no fitting kind puts each amount under its
own cause. CPU-only pods are not asked (they use no GPU). The breakdown is keyed by
(cause, node class), the class being ``type x GPUs`` (``G2 x8``), with the nodes and the
GPU-equivalents per key; the sum over keys is the cluster's free GPU-equivalents, so at 100 %
arrived the stranded causes say how the unallocated % arises.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.fit import fit
from extender.core.scoring.capacity import used_fraction
from extender.inventory.snapshot import ClusterSnapshot
from extender.simulator.replay import Replay, ReplayOptions, ReplayResult, _Kind
from extender.simulator.scenario import Scenario

FULL = 1.0 - 1e-9
"""A GPU whose used fraction is below ``1 - FULL`` counts as whole and free."""


class Cause(enum.Enum):
    USABLE = "usable"
    CPU = "cpu exhausted"
    MEMORY = "memory exhausted"
    PARTIAL = "partial GPUs"
    WHOLE = "whole GPUs, no kind fits"


STRANDED = (Cause.CPU, Cause.MEMORY, Cause.PARTIAL, Cause.WHOLE)


@dataclass(frozen=True)
class Breakdown:
    """The free GPU-equivalents at one arrived % by (cause, node class)."""

    arrived_pct: float
    gpus: float
    """GPU-equivalents of the cluster (the denominator of the percentages)."""
    free: dict[tuple[Cause, str], float]
    nodes: dict[tuple[Cause, str], int]

    def total(self, cause: Cause | None = None) -> float:
        return sum(v for (c, _), v in self.free.items() if cause is None or c is cause)

    def pct(self, cause: Cause | None = None) -> float:
        """Free GPU-equivalents of ``cause`` (all if ``None``) as % of the cluster's GPUs."""
        return 100.0 * self.total(cause) / self.gpus if self.gpus else 0.0


def node_class(snapshot: ClusterSnapshot, row: int) -> str:
    types = snapshot.gpu_type[row]
    present = types[types >= 0]
    if not len(present):
        return "cpu"
    return f"{snapshot.catalog.id_of(int(present[0]))} x{len(present)}"


FLOOR = 0.1
"""A free GPU that fewer than this share of the GPU pods (by arrivals) can use is stranded."""


def breakdown(snapshot: ClusterSnapshot, kinds: Sequence[_Kind], arrived_pct: float,
              weights: Sequence[float] | None = None, floor: float = FLOOR) -> Breakdown:
    """The free GPUs of ``snapshot`` by cause (module docstring); ``kinds``: the pod kinds
    to ask (CPU-only ones are skipped), ``weights``: their counts in the trace (default:
    equal), normalised over the GPU kinds."""
    rows = snapshot.valid_rows()
    present = snapshot.gpu_type[rows] >= 0
    with_gpus = present.any(axis=1)
    rows, present = rows[with_gpus], present[with_gpus]
    free_gpu = np.where(present, 1.0 - used_fraction(snapshot, rows), 0.0)
    whole = (free_gpu >= FULL).sum(axis=1).astype(np.float64)
    partial = np.where(free_gpu < FULL, free_gpu, 0.0).sum(axis=1)
    counts = [1.0] * len(kinds) if weights is None else [float(w) for w in weights]
    total = sum(c for c, e in zip(counts, kinds, strict=True) if e.kind.gpu_pod) or 1.0
    phi_gpu, phi_cpu, phi_full = (np.zeros(len(rows)) for _ in range(3))
    for entry, count in zip(kinds, counts, strict=True):
        if not entry.kind.gpu_pod or count <= 0:
            continue
        share = count / total
        by_gpu = fit(snapshot, entry.request, rows).fits
        phi_gpu += share * by_gpu
        phi_cpu += share * (by_gpu & (snapshot.cpu_free[rows] >= entry.kind.cpu_milli))
        phi_full += share * fit(snapshot, entry.request, rows, check_cpu_memory=True).fits
    edge = floor - 1e-9
    gpu_ok, cpu_ok, full_ok = phi_gpu >= edge, phi_cpu >= edge, phi_full >= edge
    free: dict[tuple[Cause, str], float] = {}
    nodes: Counter[tuple[Cause, str]] = Counter()
    for i, row in enumerate(rows.tolist()):
        if whole[i] + partial[i] <= 0:
            continue
        label = node_class(snapshot, row)
        parts: list[tuple[Cause, float]]
        if full_ok[i]:
            parts = [(Cause.USABLE, whole[i] + partial[i])]
        elif gpu_ok[i]:
            parts = [(Cause.MEMORY if cpu_ok[i] else Cause.CPU, whole[i] + partial[i])]
        else:
            parts = [(Cause.WHOLE, whole[i]), (Cause.PARTIAL, partial[i])]
        for cause, amount in parts:
            if amount > 0:
                free[(cause, label)] = free.get((cause, label), 0.0) + float(amount)
                nodes[(cause, label)] += 1
    gpus = float(present.sum())
    return Breakdown(round(arrived_pct, 2), gpus, free, dict(nodes))


def arrived_pcts(scenario: Scenario, order: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """(n_arrivals,) the arrived GPU demand before each arrival, % of the capacity."""
    demand = scenario.demand()[order]
    before = np.concatenate(([0], np.cumsum(demand)[:-1]))
    return before * 100.0 / max(scenario.capacity_milli, 1)


class StrandingReplay(Replay):
    """A replay that records a ``Breakdown`` at each of ``at`` (arrived %), on the snapshot
    of the first arrival that reaches it (``breakdowns``, in that order), and one of the
    state after the last arrival (``final``)."""

    def __init__(self, scenario: Scenario, options: ReplayOptions,
                 at: Sequence[float] = (100.0,)) -> None:
        super().__init__(scenario, options)
        self._weights = np.bincount(scenario.pod_kind, minlength=len(scenario.kinds)).tolist()
        self._before_pct = arrived_pcts(scenario, self.order)
        self._pending = sorted(at)
        self.breakdowns: list[Breakdown] = []
        self.final: Breakdown | None = None

    def _arriving(self, snapshot: ClusterSnapshot) -> None:
        super()._arriving(snapshot)
        pct = float(self._before_pct[self.arrival])
        while self._pending and pct >= self._pending[0]:
            self._pending.pop(0)
            self.breakdowns.append(breakdown(snapshot, self._kinds, pct, self._weights))

    def run(self, progress: Callable[[int, int], None] | None = None) -> ReplayResult:
        result = super().run(progress)
        demand = self.scenario.demand()[self.order]
        self.final = breakdown(self.inventory.snapshot(), self._kinds,
                               float(demand.sum()) * 100.0 / max(self.scenario.capacity_milli, 1),
                               self._weights)
        return result


def compare(main: Breakdown, shadow: Breakdown, top: int = 12
            ) -> list[tuple[str, str, float, float, int, int]]:
    """(cause, node class, main GPUs, shadow GPUs, main nodes, shadow nodes) for the stranded
    causes, the largest difference first."""
    keys = {k for k in (*main.free, *shadow.free) if k[0] in STRANDED}
    rows = [(cause.value, label, main.free.get((cause, label), 0.0),
             shadow.free.get((cause, label), 0.0), main.nodes.get((cause, label), 0),
             shadow.nodes.get((cause, label), 0)) for cause, label in keys]
    rows.sort(key=lambda r: (-abs(r[2] - r[3]), r[0], r[1]))
    return rows[:top]
