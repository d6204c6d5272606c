"""FGD's node fragmentation, vectorized exactly: the model (tables per typical-shape mix).

FGD (Weng et al., ATC'23) defines, for node ``n`` and typical shapes ``m`` with popularity
``p_m``::

    F_n = sum_m p_m * frag_n(m)
    frag_n(m) = free GPU capacity of n that m cannot use:
      - m is CPU-only, or n lacks CPU for m, or n's GPU type is not one m accepts:
            all free GPU capacity of n;
      - m fits (enough GPUs with free >= r_m): the free capacity of GPUs with free < r_m;
      - m does not fit: all free GPU capacity of n.

The naive cost is O(shapes x GPUs) per node. Two observations make it a gather:

1. For single-GPU shapes "does not fit" means *every* GPU has free < r_m, so both cases read
   sum_i x_i [x_i < r_m]: each GPU contributes ``x_i * A[t_i, l_n, x_i]`` where
   ``A[t, l, x] = sum_m p_m * (1 if CPU-only / type mismatch / CPU short else [x < r_m(t)])``
   depends only on the GPU's type ``t``, the node's CPU level ``l`` and the GPU's free
   thousandths ``x`` (0..1000): one table lookup per GPU.
2. Multi-GPU shapes add, when too few GPUs have x >= r, the capacity of those GPUs:
   ``B_n = sum_k S_k[n] * W_k[l_n, cnt_k[n]]`` over groups k of shapes with the same per-type
   demand ``r_k[t]`` (``MILLI + 1`` on types they do not accept), with ``cnt``/``S`` the
   count/sum of qualifying GPUs (x >= r_k[t]): a few reductions per group.

``l_n`` is the number of distinct shape CPU requests <= the node's free CPU. GPUs outside the
model (MIG-partitioned, time-sliced, unhealthy, padding) contribute nothing. Units: thousandths
of a GPU (FGD's milli).

3. Scoring a pod changes one or a few GPUs per node, so F after is F's cached parts plus the
   change: per node the snapshot's row cache keeps F now, ``sum_i x_i A[t_i, l, x_i]`` at every
   CPU level ``l`` and each group's ``cnt``/``S`` (``row_terms``), refreshed only for rows whose
   ``node_version`` changed; ``frag_after_changes`` then costs O(candidate GPUs), not
   O(cluster GPUs x shapes).

Array dimension names as in ``extender.inventory.snapshot``; ``n_types`` counts the unknown type.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.core.rowops import row_count, row_sum, row_sum_in_order
from extender.core.workload import Shape
from extender.inventory.snapshot import ClusterSnapshot
from extender.units import MILLI


@dataclass(frozen=True, eq=False)
class _MultiGroup:
    """Multi-GPU shapes sharing the same per-GPU demand on every type."""

    need: npt.NDArray[np.int64]
    """(n_types,) thousandths a GPU of each type needs to serve one GPU of the shapes;
    ``MILLI + 1`` (never met) on types the shapes do not accept. Per type, because a VRAM
    shape demands a different share of GPUs of different sizes."""
    weight: npt.NDArray[np.float64]
    """(n_levels, n_gpus_max + 1) float64: W[l, cnt] = sum p_m [cpu ok at l][cnt < k_m]."""


class FragModel:
    """Tables for one typical-shape mix; build once per mix, evaluate per call."""

    def __init__(self, catalog: Catalog, shapes: Mapping[Shape, float], *,
                 max_gpus: int = 16) -> None:
        self.catalog = catalog
        self.shapes = dict(shapes)
        n_types = len(catalog) + 1
        memory = np.maximum(catalog.memory_mib, 1)
        gpu_shapes = [(s, p) for s, p in self.shapes.items() if s.gpus > 0]
        self.cpu_levels = np.array(sorted({s.cpu_milli for s, _ in gpu_shapes}), dtype=np.int64)
        self._cpu_level_list = self.cpu_levels.tolist()
        n_levels = len(self.cpu_levels) + 1
        total_weight = float(sum(self.shapes.values()))
        table = np.full((n_types, n_levels, MILLI + 1), total_weight, dtype=np.float64)
        groups: dict[tuple[int, ...], list[tuple[Shape, float]]] = {}
        for shape, weight in gpu_shapes:
            rank = int(np.searchsorted(self.cpu_levels, shape.cpu_milli, side="left"))
            types = self._type_mask(shape)
            demand = self._demand(shape, memory)  # (n_types,) thousandths per GPU
            for t in np.flatnonzero(types):
                r = int(demand[t])
                if r <= MILLI:
                    # GPU with x >= r serves m when the node has the CPU: not a fragment
                    table[t, rank + 1:, r:] -= weight
            if shape.gpus > 1:
                need = np.where(types, np.minimum(demand, MILLI + 1), MILLI + 1)
                groups.setdefault(tuple(int(v) for v in need), []).append((shape, weight))
        self.table = table
        """(n_types, n_levels, 1001) float64: A[t, l, x]."""
        self.groups = tuple(self._group(need, members, n_levels=n_levels, max_gpus=max_gpus)
                            for need, members in groups.items())
        self._needs = np.array([group.need for group in self.groups], dtype=np.int64) \
            .reshape(len(self.groups), n_types)
        """(n_groups, n_types): each group's ``need``, stacked for ``row_terms``."""

    def _type_mask(self, shape: Shape) -> npt.NDArray[np.bool_]:
        n_types = len(self.catalog) + 1
        if shape.types is None:
            mask = np.ones(n_types, dtype=bool)
            mask[self.catalog.unknown_index] = False
            return mask
        return self.catalog.mask(shape.types)

    @staticmethod
    def _demand(shape: Shape, memory: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        if shape.vram_mib > 0:
            return np.ceil(shape.vram_mib * MILLI / memory).astype(np.int64)
        return np.full(len(memory), shape.milli, dtype=np.int64)

    def _group(self, need: tuple[int, ...], members: list[tuple[Shape, float]], *,
               n_levels: int, max_gpus: int) -> _MultiGroup:
        weight = np.zeros((n_levels, max_gpus + 1), dtype=np.float64)
        for shape, p in members:
            rank = int(np.searchsorted(self.cpu_levels, shape.cpu_milli, side="left"))
            weight[rank + 1:, : min(shape.gpus, max_gpus + 1)] += p
        return _MultiGroup(need=np.array(need, dtype=np.int64), weight=weight)

    # -- evaluation ---------------------------------------------------------------------------
    #
    # Row sums go through a matrix-vector product and gathers through flat ``take``: numpy's
    # reductions over a short last axis and 3-index fancy indexing cost several times more.

    @property
    def n_levels(self) -> int:
        return int(self.table.shape[1])

    def levels(self, cpu_free: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """(n,) CPU level of each node: how many shape CPU requests it can cover."""
        return np.searchsorted(self.cpu_levels, cpu_free, side="right").astype(np.int64)

    def _base(self, state: GpuState, level: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """(n, n_gpus) offset of ``A[t, l, 0]`` in the flat table for each GPU."""
        rows = state.type_col.astype(np.intp) * self.n_levels + level.astype(np.intp)[:, None]
        out: npt.NDArray[np.intp] = rows * (MILLI + 1)
        return out

    def _contribution(self, base: npt.NDArray[np.intp], x: npt.NDArray[np.integer[Any]]
                      ) -> npt.NDArray[np.float64]:
        """x * A[t, l, x] per GPU (0 where x is 0, which covers GPUs outside the model)."""
        return x * self.table.reshape(-1).take(base + x)

    def node_frag(self, state: GpuState, level: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """(n,) F per node for free thousandths ``state.x`` at CPU ``level``."""
        frag = row_sum(self._contribution(self._base(state, level), state.x))
        for group in self.groups:
            frag += self._group_term(group, state.x, state, level)
        return frag

    def _group_term(self, group: _MultiGroup, x: npt.NDArray[np.integer[Any]], state: GpuState,
                    level: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        qualifies = state.in_model & (x >= group.need.take(state.type_col))
        count = np.minimum(row_count(qualifies), group.weight.shape[1] - 1)
        capacity = row_sum(np.where(qualifies, x, 0).astype(np.float64))
        return capacity * group.weight[level, count]

    def row_terms(self, snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                  ) -> tuple[npt.NDArray[Any], ...]:
        """Per node, what F is made of, for every CPU level: a ``RowCache`` function.

        Returns ``(level (n,), F (n,), sums (n, n_levels), counts (n, n_groups), held (n,
        n_groups))``: the node's CPU level and F now; the sum of x * A over its GPUs at each
        level; per multi-GPU group the GPUs that qualify and their free thousandths."""
        if len(rows) == 1:
            return self._row_terms_one(snapshot, int(rows[0]))
        state = _gpu_state_rows(snapshot, rows)
        level = self.levels(snapshot.cpu_free[rows])
        n = len(rows)
        # every level at once: A[t, l, x] sits at (t * levels + l) * 1001 + x, so one gather
        # of (n, levels, n_gpus); few vector ops whatever the row count (a refresh is one row)
        x = state.x.astype(np.intp)
        first = state.type_col.astype(np.intp) * (self.n_levels * (MILLI + 1)) + x
        at_level = np.arange(self.n_levels, dtype=np.intp) * (MILLI + 1)
        gathered = self.table.reshape(-1).take(first[:, None, :] + at_level[None, :, None])
        sums = row_sum_in_order(gathered * state.x[:, None, :])
        n_groups = len(self.groups)
        if n_groups:
            needs = self._needs.take(state.type_col, axis=1)  # (n_groups, n, n_gpus)
            qualifies = state.in_model[None] & (state.x[None] >= needs)
            counts = qualifies.sum(axis=2, dtype=np.int64).T.copy()
            # integers below 2**53: exact in any order
            held = np.where(qualifies, state.x[None], 0).sum(axis=2, dtype=np.int64).T \
                .astype(np.float64)
        else:
            counts = np.empty((n, 0), dtype=np.int64)
            held = np.empty((n, 0))
        frag = sums[np.arange(n), level] + self._group_sum(counts, held, level)
        return level, frag, sums, counts, held

    def _row_terms_one(self, snapshot: ClusterSnapshot, row: int
                       ) -> tuple[npt.NDArray[Any], ...]:
        """``row_terms`` of one row (a placement's refresh) in plain Python after one gather:
        the same IEEE operations in the same order (products x * A, added left to right from
        the first GPU; the groups' terms added to 0.0 in group order), so the same bits
        (``tests/core/test_row_refresh.py``)."""
        state = _gpu_state_row(snapshot, row)
        xs, types = state.x[0].tolist(), state.type_col[0].tolist()
        inside = state.in_model[0].tolist()
        level = self.level_of(int(snapshot.cpu_free[row]))
        levels, width, gpus = self.n_levels, MILLI + 1, len(xs)
        table = self.table.reshape(-1).take(
            [(t * levels + at) * width + x for at in range(levels)
             for t, x in zip(types, xs, strict=True)]).tolist()
        sums: list[float] = []
        for at in range(levels):
            products = [a * x for a, x in zip(table[at * gpus:(at + 1) * gpus], xs,
                                               strict=True)]
            sums.append(sum(products[1:], products[0]) if products else 0.0)
        counts: list[int] = []
        held: list[float] = []
        group_sum = 0.0
        for g, group in enumerate(self.groups):
            need = self._needs[g].tolist()
            qualify = [x for x, t, here in zip(xs, types, inside, strict=True)
                       if here and x >= need[t]]
            counts.append(len(qualify))
            held.append(float(sum(qualify)))
            slots = group.weight.shape[1]
            group_sum += held[-1] * group.weight.item(level, min(counts[-1], slots - 1))
        return (np.array([level], dtype=np.int64), np.array([sums[level] + group_sum]),
                np.array([sums]), np.array([counts], dtype=np.int64).reshape(1, -1),
                np.array([held], dtype=np.float64).reshape(1, -1))

    def _group_sum(self, counts: npt.NDArray[np.int64], held: npt.NDArray[np.float64],
                   level: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        total = np.zeros(len(level))
        for g, group in enumerate(self.groups):
            slots = group.weight.shape[1]
            count = np.minimum(counts[:, g], slots - 1)
            total += held[:, g] * group.weight.reshape(-1).take(level * slots + count)
        return total

    def node_frag_cached(self, snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                         ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(CPU level, F) of snapshot ``rows`` through the snapshot's row cache (only rows
        changed since the last call are recomputed); only these two of the five kept arrays
        are gathered."""
        level: npt.NDArray[np.int64]
        frag: npt.NDArray[np.float64]
        level, frag = snapshot.cache.use(("frag-rows", self), snapshot, self.row_terms,
                                         lambda arrays: (arrays[0][rows], arrays[1][rows]))
        return level, frag

    def frag_after_changes(self, snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64],
                           level_after: npt.NDArray[np.int64], *, owner: npt.NDArray[np.intp],
                           slot: npt.NDArray[np.intp], x_after: npt.NDArray[np.int64],
                           sets: int | None = None) -> npt.NDArray[np.float64]:
        """F after sets of changes, from the cached per-node terms: O(changes), no per-GPU
        work on the rest of the cluster.

        Change ``k`` sets GPU ``slot[k]`` of node ``rows[owner[k]]`` to ``x_after[k]`` free
        thousandths (GPUs outside the model are left out by the caller or ignored here).
        ``sets=None``: every change is its own set (one-GPU shares tried GPU by GPU) and the
        result is ``(m,)``; else the changes of set ``i`` are those with ``owner == i`` (the
        GPUs a whole-GPU pod takes on node ``rows[i]``) and the result is ``(sets,)``, at
        ``level_after`` of each node."""
        row_k = rows.take(owner)
        flat = row_k * snapshot.n_gpus + slot
        x_k, type_k, in_k = snapshot.cache.use(
            ("gpu-state",), snapshot, _gpu_state_arrays,
            lambda arrays: tuple(a.reshape(-1).take(flat) for a in arrays))
        node_rows = row_k if sets is None else rows
        node_level = level_after.take(owner) if sets is None else level_after
        levels = self.n_levels
        n_groups = len(self.groups)
        sums, counts_at, held_at = snapshot.cache.use(
            ("frag-rows", self), snapshot, self.row_terms, lambda arrays: (
                arrays[2].reshape(-1).take(node_rows * levels + node_level),
                [arrays[3].reshape(-1).take(node_rows * n_groups + g) for g in range(n_groups)],
                [arrays[4].reshape(-1).take(node_rows * n_groups + g) for g in range(n_groups)]))
        x_after = np.where(in_k, x_after, 0)
        level_k = level_after.take(owner)
        base = (type_k.astype(np.intp) * levels + level_k) * (MILLI + 1)
        table = self.table.reshape(-1)
        change = x_after * table.take(base + x_after) - x_k * table.take(base + x_k)
        if sets is None:
            frag = sums + change
        else:
            frag = sums + np.bincount(owner, weights=change, minlength=sets)
        for g, group in enumerate(self.groups):
            need_k = group.need.take(type_k)
            before_q = in_k & (x_k >= need_k)
            after_q = in_k & (x_after >= need_k)
            d_count = after_q.astype(np.int64) - before_q
            d_held = np.where(after_q, x_after, 0) - np.where(before_q, x_k, 0)
            if sets is not None:
                d_count = np.bincount(owner, weights=d_count, minlength=sets).astype(np.int64)
                d_held = np.bincount(owner, weights=d_held, minlength=sets)
            count = counts_at[g] + d_count
            held = held_at[g] + d_held
            slots = group.weight.shape[1]
            count = np.minimum(count, slots - 1)
            frag += held * group.weight.reshape(-1).take(node_level * slots + count)
        return frag

    def level_of(self, cpu_free: int) -> int:
        """``levels`` of one node, in plain Python."""
        return bisect.bisect_right(self._cpu_level_list, cpu_free)

    def frag_after_taking(self, snapshot: ClusterSnapshot, row: int, level_after: int,
                          slots: Sequence[int]) -> float:
        """F of snapshot ``row`` at ``level_after`` once GPUs ``slots`` are taken whole
        (x -> 0): ``frag_after_changes(..., sets=1)`` for one node, in plain Python on the
        same cached terms.

        Why twice: a placement changes one row, so every pod refreshes that row's F after,
        and on one row the vector path is some sixty numpy calls of fixed cost. The same
        operations run in the same order (``bincount`` adds its weights to 0.0 in index
        order; IEEE doubles add and multiply alike in numpy and Python), so the result has
        the vector path's bits (``tests/core/test_row_refresh.py``)."""
        flat = [row * snapshot.n_gpus + slot for slot in slots]
        x_k, type_k, in_k = snapshot.cache.use(
            ("gpu-state",), snapshot, _gpu_state_arrays,
            lambda arrays: tuple(a.reshape(-1).take(flat).tolist() for a in arrays))
        sums, counts_at, held_at = snapshot.cache.use(
            ("frag-rows", self), snapshot, self.row_terms, lambda arrays: (
                arrays[2].item(row, level_after), arrays[3][row].tolist(),
                arrays[4][row].tolist()))
        table = self.table
        change = 0.0
        for x, gpu_type in zip(x_k, type_k, strict=True):
            at = (gpu_type, level_after)
            change += 0 * table.item(*at, 0) - x * table.item(*at, x)
        frag = sums + change
        for g, group in enumerate(self.groups):
            d_count = 0.0
            d_held = 0.0
            for x, gpu_type, inside in zip(x_k, type_k, in_k, strict=True):
                need = group.need.item(gpu_type)
                before = inside and x >= need
                after = inside and need <= 0
                d_count += int(after) - int(before)
                d_held -= x if before else 0  # x after is 0: held only loses
            slots_g = group.weight.shape[1]
            count = min(counts_at[g] + int(d_count), slots_g - 1)
            frag += (held_at[g] + d_held) * group.weight.item(level_after, count)
        return frag


@dataclass(frozen=True, eq=False)
class GpuState:
    """The model's view of the candidate rows: (n, n_gpus) arrays."""

    x: npt.NDArray[np.int16]
    """Free thousandths of each GPU, 0..1000 (0 outside the model)."""
    type_col: npt.NDArray[np.int16]
    """Catalog index (unknown index on padding)."""
    in_model: npt.NDArray[np.bool_]
    """GPU takes part: present, healthy, not MIG-partitioned, not time-sliced."""


def _gpu_state_rows(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                    ) -> GpuState:
    if len(rows) == 1:
        return _gpu_state_row(snapshot, int(rows[0]))
    gpu_type = snapshot.gpu_type[rows]
    present = gpu_type >= 0
    total = np.maximum(snapshot.total_mib[rows], 1)
    free = np.maximum(snapshot.free_mib[rows], 0)
    # floor(free * 1000 / total) in float64 is exact here (operands < 2**53)
    x = np.minimum(np.floor(free * float(MILLI) / total), MILLI)
    in_model = present & snapshot.healthy[rows] & (snapshot.mig_layout[rows] < 0) & \
        (snapshot.replicas[rows] == 0)
    type_col = np.where(present, gpu_type, snapshot.catalog.unknown_index).astype(np.int16)
    return GpuState(x=np.where(in_model, x, 0).astype(np.int16), type_col=type_col,
                    in_model=in_model)


def _gpu_state_row(snapshot: ClusterSnapshot, row: int) -> GpuState:
    """``_gpu_state_rows`` of one row in plain Python (a placement's refresh: a dozen numpy
    calls of fixed cost on eight numbers otherwise); the same float operations, so the same
    values (``tests/core/test_row_refresh.py``)."""
    unknown = snapshot.catalog.unknown_index
    x: list[int] = []
    type_col: list[int] = []
    in_model: list[bool] = []
    for gpu_type, total, free, healthy, layout, replicas in zip(
            snapshot.gpu_type[row].tolist(), snapshot.total_mib[row].tolist(),
            snapshot.free_mib[row].tolist(), snapshot.healthy[row].tolist(),
            snapshot.mig_layout[row].tolist(), snapshot.replicas[row].tolist(), strict=True):
        present = gpu_type >= 0
        inside = present and healthy and layout < 0 and replicas == 0
        in_model.append(inside)
        type_col.append(gpu_type if present else unknown)
        # floor(free * 1000 / total) in float64, as the vector path computes it
        x.append(min(math.floor(max(free, 0) * float(MILLI) / max(total, 1)), MILLI)
                 if inside else 0)
    return GpuState(x=np.array([x], dtype=np.int16), type_col=np.array([type_col], dtype=np.int16),
                    in_model=np.array([in_model], dtype=bool))


def _gpu_state_arrays(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                      ) -> tuple[npt.NDArray[Any], ...]:
    state = _gpu_state_rows(snapshot, rows)
    return state.x, state.type_col, state.in_model


def gpu_state(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]) -> GpuState:
    """The model's view of snapshot ``rows``, through the snapshot's row cache."""
    x, type_col, in_model = snapshot.cache.derive(("gpu-state",), snapshot,
                                                  _gpu_state_arrays, rows)
    return GpuState(x=x, type_col=type_col, in_model=in_model)
