"""The FGD paper's baselines, as the authors' simulator implements them (``pkg/simulator/
plugin/*.go``), on top of the fit verdicts. Integer arithmetic is kept where Go truncates, so
ties (broken at random by the caller) come out as in the original.

Details, with ``x_i`` the free thousandths of GPU ``i`` of a node, ``L = sum_i x_i``, ``c`` the
node's free millicores, and for the pod ``cpu`` millicores and ``g`` thousandths of GPU in all:

- ``random``: one fitting node, drawn uniformly, scores 100, all others 0; a GPU share goes to
  a fitting GPU drawn uniformly (``random_score.go``, ``allocateGpuIdBasedOnRandomFit``).
- ``dot-product`` (Tetris, ``merge`` dimensions, ``max`` normalisation)::

      score = floor(100 * (1 - ((c / 128000) * (cpu / 128000) + (L / 8000) * (g / 8000)) / 2))

- ``gpu-clustering``: the pod's class is ``share`` or ``k-gpu`` (CPU-only pods score 0)::

      base  = floor(25 * (8000 - L) / 8000)
      score = base + 75  the node hosts pods of this class only
                   + 50  this class and others
                   + 25  no GPU pods yet
                   +  0  only other classes

- ``gpu-packing`` (CPU-only pods score 0); with ``G`` GPUs on the node, ``F`` fully free::

      all GPUs free (F == G)           : max(33 - G, G)
      else take the fitting GPUs with the least x first; if k of them are fully free:
                                         max(50 - k, 33)
      else (only shared GPUs used)     : max(100 - floor(sum_i floor(100 x_i / 1000) / 10), 50)

A GPU share then goes to the fitting GPU with the least free thousandths (the default
``assign`` rule, the simulator's ``best`` GPU selection) for all but ``random``. GPU-equivalents
come from ``capacity.used_fraction``, so the baselines also rank MIG, replica and VRAM requests
(the openb trace has only fractions and whole GPUs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from extender.config.types import Weight
from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.scoring.base import (
    MAX_SCORE,
    NO_WEIGHTS,
    PLACEMENTS,
    ScoreResult,
    StatelessStrategy,
    StrategyContext,
)
from extender.core.scoring.capacity import request_fraction, used_fraction
from extender.core.scoring.helpers import fitting, no_choice
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, RequestKind
from extender.units import MAX_CPU_MILLI, MAX_GPU_MILLI, MILLI


def free_milli(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """(n, n_gpus) free thousandths of each GPU (0 on padding), rounded down."""
    present = snapshot.gpu_type[rows] >= 0
    free = np.floor((1.0 - used_fraction(snapshot, rows)) * MILLI + 1e-6).astype(np.int64)
    return np.where(present, np.clip(free, 0, MILLI), 0)


def demand_milli(snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult,
                 positions: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """(n,) thousandths of a GPU the pod takes on each fitting node (its cheapest unit)."""
    rows = fit.rows[positions]
    units = fit.units[positions]
    take = np.where(units > 0, request_fraction(snapshot, req, rows), np.inf).min(axis=1)
    take = np.where(np.isfinite(take), take, 0.0)
    count = 1 if req.kind in (RequestKind.FRACTION, RequestKind.VRAM) else req.count
    out: npt.NDArray[np.float64] = take * count * MILLI
    return out


def trunc_div(a: npt.NDArray[np.int64], b: int) -> npt.NDArray[np.int64]:
    """Go's integer division (truncates toward zero)."""
    out: npt.NDArray[np.int64] = np.sign(a) * (np.abs(a) // b)
    return out


def affinity(req: PlacementRequest) -> str | None:
    """The pod's GPU class (``GetGpuAffinityFromPodAnnotation``); ``None`` for CPU-only."""
    kind = req.kind
    if kind is RequestKind.WHOLE:
        return f"{req.count}-gpu" if req.count > 0 else None
    if kind in (RequestKind.FRACTION, RequestKind.VRAM):
        return "share"
    if kind is RequestKind.SHARED:
        return f"{req.count}-replica"
    return f"{req.count}-mig-{req.request.mig_profile}"


class RandomPlacement(StatelessStrategy):
    NAME: ClassVar[str] = "random"

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        positions, rows = fitting(fit)
        scores = np.zeros(len(rows), dtype=np.float64)
        choice = no_choice(len(rows))
        if len(rows) == 0:
            return ScoreResult(rows, scores, choice)
        chosen = int(self.context.rng.integers(len(rows)))
        scores[chosen] = MAX_SCORE
        if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
            slots = np.flatnonzero(fit.units[positions[chosen]] > 0)
            choice[chosen] = int(slots[self.context.rng.integers(len(slots))])
        return ScoreResult(rows, scores, choice)


class DotProduct(StatelessStrategy):
    NAME: ClassVar[str] = "dot-product"

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        positions, rows = fitting(fit)
        gpu_left = free_milli(snapshot, rows).sum(axis=1)
        cpu_left = snapshot.cpu_free[rows].astype(np.float64)
        dot = (cpu_left / MAX_CPU_MILLI) * (req.cpu_milli / MAX_CPU_MILLI) + \
            (gpu_left / MAX_GPU_MILLI) * (demand_milli(snapshot, req, fit, positions)
                                          / MAX_GPU_MILLI)
        # clipped: a node with more than 128 cores, or with its CPU over-committed by
        # observed pods, would leave [0, MAX_SCORE] (the framework rejects such scores)
        scores = np.clip(np.floor(MAX_SCORE * (1.0 - dot / 2.0)), 0.0, MAX_SCORE)
        return ScoreResult(rows, scores, no_choice(len(rows)))


class GpuClustering:
    """Needs the classes of the pods on each node (``PLACEMENTS``): the caller reports
    placements through ``placed``. The simulator does; the service does not, so ``serve``
    refuses this strategy. Counts are kept per snapshot row."""

    NAME: ClassVar[str] = "gpu-clustering"
    WEIGHTS: ClassVar[Mapping[str, Weight]] = NO_WEIGHTS
    NEEDS: ClassVar[frozenset[str]] = frozenset({PLACEMENTS})

    def __init__(self, context: StrategyContext) -> None:
        self.context = context
        self._columns: dict[str, int] = {}
        self._counts = np.zeros((0, 0), dtype=np.int32)

    def placed(self, snapshot: ClusterSnapshot, req: PlacementRequest, row: int,
               assignment: Assignment) -> None:
        name = affinity(req)
        if name is None:
            return
        column = self._columns.setdefault(name, len(self._columns))
        rows, columns = self._counts.shape
        if row >= rows or column >= columns:
            grown = np.zeros((max(rows, row + 1, snapshot.n_nodes), len(self._columns)),
                             dtype=np.int32)
            grown[:rows, :columns] = self._counts
            self._counts = grown
        self._counts[row, column] += 1

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        _, rows = fitting(fit)
        name = affinity(req)
        if name is None:
            return ScoreResult(rows, np.zeros(len(rows)), no_choice(len(rows)))
        counts = np.zeros((len(rows), max(len(self._columns), 1)), dtype=np.int32)
        known = rows < self._counts.shape[0]
        counts[known, : self._counts.shape[1]] = self._counts[rows[known]]
        classes = (counts > 0).sum(axis=1)
        column = self._columns.get(name)
        same = counts[:, column] > 0 if column is not None else np.zeros(len(rows), bool)
        left = free_milli(snapshot, rows).sum(axis=1)
        base = trunc_div(25 * (MAX_GPU_MILLI - left), MAX_GPU_MILLI)
        band = np.where(same, np.where(classes == 1, 75, 50), np.where(classes == 0, 25, 0))
        # clipped: a node with more free GPU than the 8-GPU node the formula normalises by
        # would score below 0 (the framework rejects scores outside [0, MAX_SCORE])
        scores = np.clip((base + band).astype(np.float64), 0.0, MAX_SCORE)
        return ScoreResult(rows, scores, no_choice(len(rows)))


class GpuPacking(StatelessStrategy):
    NAME: ClassVar[str] = "gpu-packing"

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult:
        positions, rows = fitting(fit)
        if req.kind is RequestKind.WHOLE and req.count == 0:
            return ScoreResult(rows, np.zeros(len(rows)), no_choice(len(rows)))
        x = free_milli(snapshot, rows)
        present = snapshot.gpu_type[rows] >= 0
        gpus = present.sum(axis=1)
        fully_free = (present & (x == MILLI)).sum(axis=1)
        need = 1 if req.kind in (RequestKind.FRACTION, RequestKind.VRAM) else req.count
        n_gpus = x.shape[1]
        usable = fit.units[positions] > 0
        # least free first, lowest slot on ties (a stable ascending sort)
        key = np.where(usable, x * (n_gpus + 1) + np.arange(n_gpus), np.iinfo(np.int64).max)
        chosen = np.sort(key, axis=1)[:, :need]
        taken_x = np.where(chosen < np.iinfo(np.int64).max, chosen // (n_gpus + 1), 0)
        free_used = (taken_x == MILLI).sum(axis=1)
        ratio = (taken_x * 100 // MILLI).sum(axis=1)
        scores = np.where(
            fully_free == gpus, np.maximum(33 - gpus, gpus),
            np.where(free_used > 0, np.maximum(50 - free_used, 33),
                     np.maximum(100 - ratio // 10, 50)))
        return ScoreResult(rows, scores.astype(np.float64), no_choice(len(rows)))
