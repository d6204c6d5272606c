"""The limit: how many GPUs any policy could allocate at 100 % arrival, packed offline.

Details. The pods that have arrived when the arrived GPU demand reaches the cluster's
capacity (the replay's arrival order for the seed, resampled pods included) are packed with
full knowledge by an integer program over pod kinds ``s`` (``n_s`` arrived pods) and node
classes ``k`` (``N_k`` identical nodes: GPU type, ``G_k`` GPUs of ``V_k`` MiB, ``C_k``
millicores, ``M_k`` MiB). ``x[s, k]`` >= 0 integer pods of kind s on class k; ``a[s, k]`` the
GPU-equivalents one such pod holds there (``count`` for whole GPUs, ``milli / 1000`` for a
fraction, ``vram / V_k`` for a VRAM share); ``x[s, k]`` is fixed to 0 where one pod cannot
fit a node of class k at all (type not allowed, too few GPUs, CPU, memory or VRAM)::

    maximise   sum_{s,k} a[s,k] x[s,k]                   GPU-equivalents allocated
    subject to sum_k x[s,k]                  <= n_s       pods that arrived
               sum_s a[s,k] x[s,k]           <= N_k G_k   GPU capacity
               sum_s u[s,k] x[s,k]           <= N_k G_k   GPUs used alone: u = count for
                                                          whole GPUs, 1 for a share above
                                                          half a GPU (two never share)
               sum_{s: count > G_k/2} x[s,k] <= N_k       at most one such pod per node
               sum_s cpu_s x[s,k]            <= N_k C_k
               sum_s mem_s x[s,k]            <= N_k M_k

Every real placement of the arrived pods satisfies these constraints, so the optimum (or
HiGHS's dual bound when the time limit stops it first) bounds every policy from above: the
unallocated % at 100 % arrival can be no lower than ``100 - 100 * bound / GPUs``. It is a
relaxation (nodes of a class pool their capacity; shares below half a GPU pack as fluid), so
the true limit may be higher than the figure: a gap to it is an upper bound on what a better
policy could still win.

Plain GPUs only: MIG-partitioned or time-sliced GPUs and MIG / replica requests (none in the
openb traces) raise ``ValueError``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.model import NodeInfo, RequestKind
from extender.simulator.inflate import arrival_order
from extender.simulator.scenario import Scenario
from extender.units import MILLI


@dataclass(frozen=True)
class Bound:
    scenario: str
    seed: int
    gpus: int
    pods: int
    """Pods arrived when the arrived demand reaches 100 % of the GPUs."""
    allocated_gpus: float
    """Upper bound on the GPU-equivalents any policy allocates to them."""
    lp_gpus: float
    """The linear relaxation's optimum (>= ``allocated_gpus``)."""
    optimal: bool
    """False: HiGHS hit its time limit; ``allocated_gpus`` is then its dual bound."""

    @property
    def unallocated_pct(self) -> float:
        """The lowest unallocated % at 100 % arrival that any policy could reach."""
        return round(100.0 - 100.0 * self.allocated_gpus / max(self.gpus, 1), 4)


@dataclass(frozen=True)
class _NodeClass:
    type_index: int
    gpus: int
    vram_mib: int
    cpu_milli: int
    memory_mib: int


def node_classes(nodes: tuple[NodeInfo, ...]) -> Counter[_NodeClass]:
    classes: Counter[_NodeClass] = Counter()
    for node in nodes:
        if not node.gpus:
            continue
        types = {g.type_index for g in node.gpus}
        if len(types) != 1 or any(g.mig is not None or g.replicas > 1 for g in node.gpus):
            raise ValueError(f"node {node.name}: the bound models nodes of one plain GPU type")
        classes[_NodeClass(types.pop(), len(node.gpus), min(g.memory_mib for g in node.gpus),
                           node.cpu_milli, node.memory_mib)] += 1
    return classes


def arrived_at_capacity(scenario: Scenario, seed: int, inflate: float
                        ) -> npt.NDArray[np.int64]:
    """Kind of each pod that has arrived when the arrived demand reaches the capacity (the
    replay's arrival order: the same seed stream)."""
    order_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[0])
    order = arrival_order(scenario.pod_names, scenario.demand(), scenario.capacity_milli,
                          inflate, order_rng)
    demand = scenario.demand()[order]
    arrived = np.cumsum(demand) <= scenario.capacity_milli
    return scenario.pod_kind[order[arrived]]


def offline_bound(scenario: Scenario, *, seed: int = 42, inflate: float = 1.3,
                  time_limit: float = 60.0) -> Bound:
    from scipy.sparse import lil_matrix

    kinds_arrived = arrived_at_capacity(scenario, seed, inflate)
    counts = np.bincount(kinds_arrived, minlength=len(scenario.kinds))
    classes = node_classes(scenario.nodes)
    platform = scenario.platform
    memory = platform.catalog.memory_mib
    kinds = [(s, scenario.kinds[s]) for s in np.flatnonzero(counts)
             if scenario.kinds[s].gpu_pod]
    class_list = list(classes.items())
    variables: list[tuple[int, int, float, float]] = []  # (kind row, class, a, u)
    for i, (_, kind) in enumerate(kinds):
        request = kind.request
        if request.kind not in (RequestKind.WHOLE, RequestKind.FRACTION, RequestKind.VRAM):
            raise ValueError(f"the bound does not model {request.kind.value} requests")
        allowed = platform.placement_request(request, namespace=kind.namespace).allowed
        for k, (cls, _) in enumerate(class_list):
            if not allowed[cls.type_index] or kind.cpu_milli > cls.cpu_milli or \
                    kind.memory_mib > cls.memory_mib:
                continue
            if request.kind is RequestKind.WHOLE:
                if request.count > cls.gpus:
                    continue
                a, u = float(request.count), float(request.count)
            elif request.kind is RequestKind.FRACTION:
                a = request.milli / MILLI
                u = 1.0 if request.milli * 2 > MILLI else 0.0
            else:
                vram = max(cls.vram_mib, int(memory[cls.type_index]), 1)
                if request.vram_mib > vram:
                    continue
                a = request.vram_mib / vram
                u = 1.0 if a > 0.5 else 0.0
            variables.append((i, k, a, u))
    n = len(variables)
    gpus = scenario.gpu_count
    if n == 0:
        return Bound(scenario.name, seed, gpus, len(kinds_arrived), 0.0, 0.0, True)
    rows = len(kinds) + 5 * len(class_list)
    matrix = lil_matrix((rows, n))
    upper = np.zeros(rows)
    objective = np.zeros(n)
    for v, (i, k, a, u) in enumerate(variables):
        kind = kinds[i][1]
        cls, nodes = class_list[k]
        base = len(kinds) + 5 * k
        objective[v] = a
        matrix[i, v] = 1.0
        matrix[base, v] = a
        matrix[base + 1, v] = u
        big = kind.request.kind is RequestKind.WHOLE and kind.request.count * 2 > cls.gpus
        matrix[base + 2, v] = 1.0 if big else 0.0
        matrix[base + 3, v] = kind.cpu_milli
        matrix[base + 4, v] = kind.memory_mib
    for i, (s, _) in enumerate(kinds):
        upper[i] = counts[s]
    for k, (cls, nodes) in enumerate(class_list):
        base = len(kinds) + 5 * k
        upper[base: base + 5] = (nodes * cls.gpus, nodes * cls.gpus, nodes,
                                 nodes * cls.cpu_milli, nodes * cls.memory_mib)
    lp_gpus, best, optimal = solve_packing(objective, matrix.tocsr(), upper, gpus, time_limit)
    return Bound(scenario.name, seed, gpus, len(kinds_arrived), round(best, 4),
                 round(lp_gpus, 4), optimal)


def solve_packing(objective: npt.NDArray[np.float64], matrix: Any,
                  upper: npt.NDArray[np.float64], gpus: int, time_limit: float
                  ) -> tuple[float, float, bool]:
    """maximise ``objective @ x`` s.t. ``matrix @ x <= upper``, ``x >= 0``, with HiGHS:
    (the LP optimum, the integer optimum or, past ``time_limit``, the MILP's dual bound, and
    whether the MILP finished); both capped at ``gpus``."""
    from scipy.optimize import Bounds, LinearConstraint, linprog, milp

    relaxed = linprog(-objective, A_ub=matrix, b_ub=upper, bounds=(0, None), method="highs")
    lp_gpus = float(-relaxed.fun) if relaxed.status == 0 else float(gpus)
    result = milp(-objective, constraints=LinearConstraint(matrix, -np.inf, upper),
                  integrality=np.ones(len(objective)), bounds=Bounds(0, np.inf),
                  options={"time_limit": time_limit, "mip_rel_gap": 1e-6})
    optimal = result.status == 0
    if optimal:
        best = float(-result.fun)
    else:
        dual = getattr(result, "mip_dual_bound", None)
        best = float(-dual) if dual is not None and np.isfinite(dual) else lp_gpus
    return min(lp_gpus, float(gpus)), min(best, lp_gpus, float(gpus)), optimal
