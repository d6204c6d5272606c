"""What a replay measures after every arrival, and the curve per 1 % of arrived demand.

Details (FGD's ``merge_*_discrete.py``): after arrival ``j`` the recorder logs

    arrived_j   = sum of GPU demand of pods 1..j, placed or not   (thousandths)
    used_j      = GPU-equivalents held by placed pods
    frag_j      = sum over nodes of F_n (FGD's fragmentation against the typical shapes)
    cost_j      = sum over placed pods of price(type) x GPU-equivalents     (USD per hour)
    occupied_j  = sum over nodes holding at least one pod of the node's price  (USD per hour)

``cost`` is what the allocated GPUs are worth (a fixed fleet pays for every node anyway);
``occupied`` is the bill of an elastic node pool, where a node without pods is scaled away:
a node's price is the sum of its GPUs' catalog prices (CPU-only nodes count 0: the catalog
prices GPUs only). Pods never depart in a replay, so a node stays occupied once used.

The curve has one point per integer ``k`` of arrived % (= 100 arrived / capacity): the mean
of the logged values over the arrivals whose arrived % rounds to ``k`` (half to even, as
pandas' ``round``), or, when none does, over those within ``k +- 1``. Allocation and
fragmentation are in % of the cluster's GPUs; unallocated % = 100 - allocation.

F is kept per node and updated only on the node that changed, so logging costs one row of
``FragModel.node_frag`` per arrival instead of the whole cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.fragmentation.model import FragModel, gpu_state
from extender.inventory.snapshot import ClusterSnapshot
from extender.units import MILLI


@dataclass(frozen=True)
class CurvePoint:
    arrived_pct: int
    allocated_pct: float
    frag_pct: float
    cost_per_hour: float
    occupied_cost_per_hour: float = 0.0
    """$/h of the nodes that hold at least one pod (see the module docstring)."""

    @property
    def unallocated_pct(self) -> float:
        return 100.0 - self.allocated_pct


class Recorder:
    """Per-arrival log of one replay (see the module docstring)."""

    def __init__(self, model: FragModel, snapshot: ClusterSnapshot,
                 capacity_milli: int) -> None:
        self.model = model
        self.capacity_milli = capacity_milli
        rows = snapshot.valid_rows()
        self._frag = np.zeros(snapshot.n_nodes, dtype=np.float64)
        if len(rows):
            state = gpu_state(snapshot, rows)
            self._frag[rows] = model.node_frag(state, model.levels(snapshot.cpu_free[rows]))
        gpu_type = snapshot.gpu_type
        price = np.where(gpu_type >= 0, snapshot.catalog.price[np.maximum(gpu_type, 0)], 0.0)
        self._node_price = price.sum(axis=1)
        self._occupied = np.zeros(snapshot.n_nodes, dtype=bool)
        self._arrived = 0
        self._used = 0.0
        self._cost = 0.0
        self._occupied_cost = 0.0
        self._log: list[tuple[int, float, float, float, float]] = []

    def node_changed(self, snapshot: ClusterSnapshot, row: int) -> None:
        """Recompute F of one node (after a pod was placed on it); it is now occupied."""
        if not self._occupied[row]:
            self._occupied[row] = True
            self._occupied_cost += float(self._node_price[row])
        rows = np.array([row], dtype=np.int64)
        state = gpu_state(snapshot, rows)
        self._frag[row] = float(self.model.node_frag(
            state, self.model.levels(snapshot.cpu_free[rows]))[0])

    def arrival(self, demand_milli: int, gpus: float = 0.0, cost: float = 0.0) -> None:
        """Log one arrival; ``gpus``/``cost`` are what it was given (0 if it failed)."""
        self._arrived += demand_milli
        self._used += gpus
        self._cost += cost
        self._log.append((self._arrived, self._used, float(self._frag.sum()), self._cost,
                          self._occupied_cost))

    @property
    def used_gpus(self) -> float:
        return self._used

    @property
    def cost_per_hour(self) -> float:
        return self._cost

    @property
    def occupied_cost_per_hour(self) -> float:
        return self._occupied_cost

    def log(self) -> npt.NDArray[np.float64]:
        """(n_arrivals, 5): arrived thousandths, used GPUs, frag thousandths, cost, occupied
        cost."""
        if not self._log:
            return np.zeros((0, 5), dtype=np.float64)
        return np.array(self._log, dtype=np.float64)

    def curve(self, last_pct: int) -> list[CurvePoint]:
        return bin_curve(self.log(), self.capacity_milli, last_pct)


def bin_curve(log: npt.NDArray[np.float64], capacity_milli: int,
              last_pct: int) -> list[CurvePoint]:
    """The per-1 % curve of a log (see the module docstring); points without data are left
    out."""
    if len(log) == 0 or capacity_milli <= 0:
        return []
    arrived_pct = log[:, 0] * 100.0 / capacity_milli
    bins = np.round(arrived_pct)
    gpus = capacity_milli / MILLI
    points: list[CurvePoint] = []
    for k in range(last_pct + 1):
        mask = bins == k
        if not mask.any():
            mask = (bins >= k - 1) & (bins <= k + 1)
            if not mask.any():
                continue
        values = log[mask].mean(axis=0)
        points.append(CurvePoint(arrived_pct=k,
                                 allocated_pct=round(float(values[1]) * 100.0 / gpus, 4),
                                 frag_pct=round(float(values[2]) / MILLI * 100.0 / gpus, 4),
                                 cost_per_hour=round(float(values[3]), 4),
                                 occupied_cost_per_hour=round(float(values[4]), 4)
                                 if log.shape[1] > 4 else 0.0))
    return points
