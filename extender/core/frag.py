"""FGD's node fragmentation, vectorized exactly.

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

Array dimension names as in ``extender.inventory.snapshot``; ``n_types`` counts the unknown type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.core.workload import Shape
from extender.inventory.snapshot import ClusterSnapshot

MILLI = 1000


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

    def levels(self, cpu_free: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """(n,) CPU level of each node: how many shape CPU requests it can cover."""
        return np.searchsorted(self.cpu_levels, cpu_free, side="right").astype(np.int64)

    def node_frag(self, state: GpuState, level: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """(n,) F per node for free thousandths ``state.x`` at CPU ``level``."""
        per_gpu = state.x * self.table[state.type_col, level[:, None], state.x]
        frag = np.where(state.in_model, per_gpu, 0.0).sum(axis=1)
        for group in self.groups:
            frag += self._group_term(group, state.x, state, level)
        return frag

    def _group_term(self, group: _MultiGroup, x: npt.NDArray[np.int64], state: GpuState,
                    level: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        qualifies = state.in_model & (x >= group.need[state.type_col])
        count = qualifies.sum(axis=1)
        capacity = np.where(qualifies, x, 0).sum(axis=1)
        count = np.minimum(count, group.weight.shape[1] - 1)
        return capacity * group.weight[level, count]

    def frag_after_share(self, state: GpuState, level_after: npt.NDArray[np.int64],
                         x_after: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """(n, n_gpus) F of each node if GPU j alone changed to ``x_after[:, j]`` free
        thousandths, for every j (entries where the pod does not fit are meaningless)."""
        lv = level_after[:, None]
        x = state.x
        contribution = np.where(state.in_model, x * self.table[state.type_col, lv, x], 0.0)
        base = contribution.sum(axis=1)[:, None]
        changed = np.where(state.in_model, x_after * self.table[state.type_col, lv, x_after],
                           0.0)
        frag = base - contribution + changed
        for group in self.groups:
            need = group.need[state.type_col]
            before_q = state.in_model & (x >= need)
            after_q = state.in_model & (x_after >= need)
            count = before_q.sum(axis=1)[:, None] - before_q + after_q
            capacity = np.where(before_q, x, 0).sum(axis=1)[:, None] - np.where(
                before_q, x, 0) + np.where(after_q, x_after, 0)
            count = np.minimum(count, group.weight.shape[1] - 1)
            frag += capacity * group.weight[lv, count]
        return frag

    def frag_after_whole(self, state: GpuState, level_after: npt.NDArray[np.int64],
                         taken: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        """(n,) F after the GPUs marked in ``taken`` (n, n_gpus) are fully taken."""
        after = GpuState(x=np.where(taken, 0, state.x), type_col=state.type_col,
                         in_model=state.in_model)
        return self.node_frag(after, level_after)


@dataclass(frozen=True, eq=False)
class GpuState:
    """The model's view of the candidate rows: (n, n_gpus) arrays."""

    x: npt.NDArray[np.int64]
    """Free thousandths of each GPU, 0..1000."""
    type_col: npt.NDArray[np.int64]
    """Catalog index (unknown index on padding)."""
    in_model: npt.NDArray[np.bool_]
    """GPU takes part: present, healthy, not MIG-partitioned, not time-sliced."""


def gpu_state(snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]) -> GpuState:
    gpu_type = snapshot.gpu_type[rows]
    present = gpu_type >= 0
    total = np.maximum(snapshot.total_mib[rows].astype(np.int64), 1)
    free = np.clip(snapshot.free_mib[rows].astype(np.int64), 0, None)
    x = np.minimum(free * MILLI // total, MILLI)
    in_model = present & snapshot.healthy[rows] & (snapshot.mig_layout[rows] < 0) & \
        (snapshot.replicas[rows] == 0)
    type_col = np.where(present, gpu_type, snapshot.catalog.unknown_index).astype(np.int64)
    return GpuState(x=np.where(in_model, x, 0), type_col=type_col, in_model=in_model)


def sigmoid(value: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * value))
    return out


def cluster_frag(model: FragModel, snapshot: ClusterSnapshot) -> float:
    """Sum of F over all nodes, in GPUs (FGD's "fragmentation amount")."""
    rows = snapshot.valid_rows()
    if len(rows) == 0:
        return 0.0
    state = gpu_state(snapshot, rows)
    level = model.levels(snapshot.cpu_free[rows])
    return float(model.node_frag(state, level).sum()) / MILLI


