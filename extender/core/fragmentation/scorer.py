"""The fragmentation model in step with the workload mix, and F before and after a pod on each
fitting node (``FragScorer``, shared by FGD and the default strategy), with the per-GPU helpers
it needs: the GPUs with a unit, one GPU per distinct state, what a share leaves free.

The model itself (``FragModel``, the FGD formulas): ``extender.core.fragmentation.model``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.core import fit as kernel
from extender.core.fit import FitResult
from extender.core.fragmentation.model import FragModel
from extender.core.reasons import Reason
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero, group_starts
from extender.core.workload import Shape, WorkloadMix
from extender.inventory.snapshot import ClusterSnapshot, Derived, RowCache
from extender.model import RequestKind
from extender.units import MILLI

KEPT_REQUESTS = 8
"""Requests whose whole-GPU F after is kept per row (each (n_nodes,) floats)."""


def sigmoid(value: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * value))
    return out


class FragScorer:
    """Keeps a ``FragModel`` in step with the workload mix and computes F before and after a
    pod on each fitting node (and, for a one-GPU share, on each of its GPUs). Shared by the
    FGD and the default strategy."""

    def __init__(self, catalog: Catalog, workload: WorkloadMix) -> None:
        self.catalog = catalog
        self.workload = workload
        self._model: FragModel | None = None
        self._version = -1
        self._after = RowCache(max_keys=KEPT_REQUESTS)
        """Whole-GPU F after on every row, per (model, request object, inventory)."""
        self._seen = RecentRequests()
        """Requests scored lately: the second call of one (a burst's replicas share it) starts
        keeping its F after per row; a one-off request is not worth the fill."""

    def model(self) -> FragModel:
        workload = self.workload
        if self._model is None or self._version != workload.version:
            self._version = workload.version
            self._model = FragModel(self.catalog, workload.typical())
        return self._model

    def set_shapes(self, shapes: Mapping[Shape, float]) -> None:
        """Fix the typical shapes (the simulator takes them from the trace)."""
        self._model = FragModel(self.catalog, shapes)
        self._version = self.workload.version

    def _prepare(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult
                 ) -> tuple[FragModel, npt.NDArray[np.int64], npt.NDArray[np.int64],
                            npt.NDArray[np.float64], npt.NDArray[np.int64],
                            npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """(model, positions, rows, F before, CPU level after, pair node, pair slot) for the
        fitting nodes; pairs are every GPU with a unit, sorted by node then slot."""
        positions = flat_nonzero(fit.fits)
        rows = fit.rows[positions]
        model = self.model()
        level, before = model.node_frag_cached(snapshot, rows)
        level_after = level if req.cpu_milli == 0 else \
            model.levels(snapshot.cpu_free[rows] - req.cpu_milli)
        pos, slot = unit_pairs(fit, positions)
        return model, positions, rows, before, level_after, pos, slot

    def share_pairs(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult,
                    *, distinct: bool = False
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                               npt.NDArray[np.float64], npt.NDArray[np.intp],
                               npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """A one-GPU share on fitting nodes, per candidate GPU: (positions, rows, F before
        (n,), pair node (m,) as an index into rows, pair slot (m,), F after (m,)); pairs
        sorted by node then slot. ``distinct``: leave out GPUs in the same state as a lower
        slot of their node (same F after; for callers that want each node's best GPU, lowest
        slot first)."""
        model, positions, rows, before, level_after, pos, slot = \
            self._prepare(snapshot, req, fit)
        if distinct:
            keep = first_of_kind(snapshot, rows.take(pos), slot)
            if not keep.all():
                pos, slot = pos[keep], slot[keep]
        x_after = share_after_at(snapshot, req, rows.take(pos), slot)
        after = model.frag_after_changes(snapshot, rows, level_after, owner=pos, slot=slot,
                                         x_after=x_after)
        return positions, rows, before, pos, slot, after

    def frag_after(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                              npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """For fitting nodes: (positions, rows, F before (n,), F after) in thousandths.

        F after is ``(n, n_gpus)`` for a one-GPU share (placed on GPU j; ``inf`` where it does
        not fit) and ``(n,)`` otherwise (whole GPUs: the lowest fully free ones)."""
        if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
            positions, rows, before, pos, slot, pairs = self.share_pairs(snapshot, req, fit)
            grid = np.full((len(rows), snapshot.n_gpus), np.inf)
            grid[pos, slot] = pairs
            return positions, rows, before, grid
        if len(fit.rows) == 1:
            return self._whole_after_one(snapshot, req, fit)
        if len(fit.rows) * 2 >= snapshot.n_nodes and self._seen.again(req):
            return self._whole_after_kept(snapshot, req, fit)
        return self._whole_after(snapshot, req, fit)

    def _whole_after_one(self, snapshot: ClusterSnapshot, req: PlacementRequest,
                         fit: FitResult
                         ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                    npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``_whole_after`` of a fit of one row, in plain Python (``frag_after_taking``: the
        vector path's bits): a placement's refreshed row, or the one node a bind scores."""
        model = self.model()
        if fit.code.item(0) != Reason.FITS:
            return (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0),
                    np.zeros(0))
        row = int(fit.rows[0])
        taken = flat_nonzero(fit.units[0] > 0)[:req.count].tolist()
        level = model.level_of(int(snapshot.cpu_free[row]) - req.cpu_milli)
        after = model.frag_after_taking(snapshot, row, level, taken)
        rows = fit.rows[:1]
        _, before = model.node_frag_cached(snapshot, rows)
        return np.zeros(1, dtype=np.int64), rows, before, np.array([after])

    def _whole_after_kept(self, snapshot: ClusterSnapshot, req: PlacementRequest,
                          fit: FitResult
                          ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                     npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``_whole_after`` from F after kept per row: F after of a row is a function of that
        row (its fit and its state), so only rows whose ``node_version`` changed are computed
        again (their fit read from the caller's, which ``fit`` computed on this snapshot, or
        computed without the CPU check: it only ever removes rows, and a row's F after does
        not depend on it; a row kept without a value is never read while it stays as it is).
        Keyed like ``core.fit_cache``: the model, the request object, whether DRA nodes
        exist, the inventory's row cache."""
        model = self.model()
        positions = flat_nonzero(fit.fits)
        rows = fit.rows[positions]

        def compute(snap: ClusterSnapshot, stale: npt.NDArray[np.int64]) -> Derived:
            fitted = fit_at_rows(snap, req, fit, stale)
            out = np.full(len(stale), np.nan)
            # a placement's row: plain Python, the same bits
            at, _, _, after = self._whole_after_one(snap, req, fitted) if len(stale) == 1 \
                else self._whole_after(snap, req, fitted)
            out[at] = after
            return (out,)

        after = self._after.use((model, req, bool(snapshot.node_dra.shape[0]), snapshot.cache),
                                snapshot, compute, lambda arrays: arrays[0].take(rows))
        if np.isnan(after).any():  # a row the caller's fit passes and ``fit`` does not
            return self._whole_after(snapshot, req, fit)
        _, before = model.node_frag_cached(snapshot, rows)
        return positions, rows, before, after

    def _whole_after(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        model, positions, rows, before, level_after, pos, slot = \
            self._prepare(snapshot, req, fit)
        # the lowest ``count`` GPUs with a unit are taken whole (x -> 0)
        if len(pos):
            starts = group_starts(pos)
            rank = np.arange(len(pos)) - np.repeat(starts, np.diff(np.r_[starts, len(pos)]))
            keep = rank < req.count
            pos, slot = pos[keep], slot[keep]
        after = model.frag_after_changes(snapshot, rows, level_after, owner=pos, slot=slot,
                                         x_after=np.zeros(len(pos), dtype=np.int64),
                                         sets=len(rows))
        return positions, rows, before, after


class RecentRequests:
    """The last ``KEPT_REQUESTS`` request objects asked about (an LRU): a per-row cache fills
    for a request only when it comes again (a burst's replicas share one), not for a one-off
    that would evict a kept one."""

    def __init__(self) -> None:
        self._seen: OrderedDict[PlacementRequest, None] = OrderedDict()

    def seen(self, req: PlacementRequest) -> bool:
        """Whether ``req`` is among the last ones asked about (remembers nothing)."""
        return req in self._seen

    def again(self, req: PlacementRequest) -> bool:
        """Whether ``req`` was asked about before; it is remembered from now on."""
        seen = req in self._seen
        self._seen[req] = None
        self._seen.move_to_end(req)
        while len(self._seen) > KEPT_REQUESTS:
            self._seen.popitem(last=False)
        return seen


def fit_at_rows(snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult,
                rows: npt.NDArray[np.int64]) -> FitResult:
    """The fit of a few snapshot ``rows``: sliced out of ``fit`` (the caller's, on this
    snapshot) when it has them all, else computed."""
    if len(rows) * 4 > len(fit.rows):  # the first fill, or many rows: the kernel
        return kernel.fit(snapshot, req, rows)
    where = np.full(snapshot.n_nodes, -1, dtype=np.int64)
    where[fit.rows] = np.arange(len(fit.rows))
    positions = where.take(rows)
    if len(positions) and int(positions.min()) < 0:
        return kernel.fit(snapshot, req, rows)
    return FitResult(rows=rows, code=fit.code.take(positions), params=fit.params[positions],
                     units=fit.units[positions])


def unit_pairs(fit: FitResult, positions: npt.NDArray[np.int64]
               ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """(node, slot) of every GPU with a unit on the fitting nodes, sorted by node then slot;
    ``node`` indexes ``positions``."""
    units = fit.units
    width = units.shape[1]
    flat = flat_nonzero(units > 0)
    row = flat // width
    slot = flat - row * width
    index = np.full(len(units), -1, dtype=np.intp)
    index[positions] = np.arange(len(positions))
    node = index.take(row)
    keep = node >= 0
    if not keep.all():
        node, slot = node[keep], slot[keep]
    return node.astype(np.intp), slot.astype(np.intp)


_SIGNATURE = ("gpu_type", "total_mib", "free_mib", "replicas", "replicas_free",
              "replicas_shared", "mig_layout", "mig_used", "healthy")
"""Per-GPU state that decides whether and how a one-GPU share fits (not which pods)."""


def _first_of_kind_rows(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                        ) -> tuple[npt.NDArray[np.bool_]]:
    """(n, n_gpus) True for a GPU unless an earlier GPU of its node is in the same state."""
    width = snapshot.n_gpus
    # same[i, g, h]: GPUs g and h of row i agree on every column (a few vector ops per
    # column, whatever the row count: a refresh is one row)
    same = np.ones((len(rows), width, width), dtype=bool)
    for name in _SIGNATURE:
        column = getattr(snapshot, name)[rows]
        same &= column[:, :, None] == column[:, None, :]
    earlier = np.tri(width, width, -1, dtype=bool)  # h < g
    return (~(same & earlier).any(axis=2),)


def first_of_kind(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64],
                  slots: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """(m,) for GPU ``slots[k]`` of row ``rows[k]``: no lower slot of that node is in the same
    state (through the snapshot's row cache: only rows that changed are recomputed)."""
    flat = rows * snapshot.n_gpus + slots
    first: npt.NDArray[np.bool_] = snapshot.cache.use(
        ("first-of-kind",), snapshot, _first_of_kind_rows,
        lambda arrays: arrays[0].reshape(-1).take(flat))
    return first


def share_after_at(snapshot: ClusterSnapshot, req: PlacementRequest,
                   rows: npt.NDArray[np.int64], slots: npt.NDArray[np.intp]
                   ) -> npt.NDArray[np.int64]:
    """(m,) free thousandths GPU ``slots[k]`` of snapshot row ``rows[k]`` keeps after hosting
    a one-GPU share (a fraction holds ``milli`` of the GPU's memory, a VRAM share its MiB)."""
    flat = rows * snapshot.n_gpus + slots
    total = np.maximum(snapshot.total_mib.reshape(-1).take(flat), 1)
    free = np.maximum(snapshot.free_mib.reshape(-1).take(flat), 0)
    held: npt.NDArray[np.int64] | int = total.astype(np.int64) * req.request.milli // 1000 \
        if req.kind is RequestKind.FRACTION else req.request.vram_mib
    left = np.maximum(free - held, 0)
    # floor(left * 1000 / total) in float64 is exact here (operands < 2**53)
    return np.minimum(np.floor(left * float(MILLI) / total), MILLI).astype(np.int64)
