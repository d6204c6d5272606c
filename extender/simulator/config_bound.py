"""A tighter limit: shares packed GPU by GPU, over every configuration one GPU can hold.

Details. ``bound.py`` lets shares of at most half a GPU pack as fluid, so a GPU holding an
0.81 share looks able to take 0.19 of anything; the openb traces have few shares that small,
and that is most of what the pooled bound misses. Here a *configuration* ``c`` is a multiset
of share sizes (thousandths of a GPU: the distinct ``gpu_milli`` values of the arrived pods)
that one GPU can hold at once (sum <= 1000); only maximal ones are listed (no further size
fits), since a slot may stay empty. They are enumerated: 1,871 for the default trace's 20
sizes. Node classes ``k`` (``N_k`` identical nodes: GPU type, ``G_k`` GPUs, ``C_k``
millicores, ``M_k`` MiB) pool their CPU and memory as in ``bound.py``. Variables: ``x[s, k]``
pods of kind ``s`` on class ``k`` (0 where one pod cannot fit such a node: type, GPUs, CPU,
memory), ``y[k, c]`` GPUs of class ``k`` in configuration ``c``; ``m_v(c)`` the slots of size
``v`` in ``c``, ``a_s`` the GPU-equivalents of a pod::

    maximise   sum_{s,k} a_s x[s,k]
    subject to sum_k x[s,k]                           <= n_s        pods that arrived
               sum_c y[k,c] + sum_{s whole} g_s x[s,k] <= N_k G_k   each GPU: one config
                                                                   or whole-GPU pods
               sum_{s share of size v} x[s,k]         <= sum_c m_v(c) y[k,c]   each size v
               sum_{s: g_s > G_k / 2} x[s,k]          <= N_k        one such pod per node
               sum_s cpu_s x[s,k] <= N_k C_k,  the same for memory
               x, y integer >= 0

Every placement of the arrived pods gives a solution (each GPU's shares fit in some maximal
configuration), so the integer optimum bounds every policy's allocation from above, and so
does its linear relaxation (looser). Both are solved with HiGHS (scipy): ``lp_gpus`` the
relaxation, ``ip_gpus`` the integer optimum, or HiGHS's dual bound when the time limit stops
the search first (``optimal`` False; still a valid bound). What remains relaxed: CPU and
memory are pooled per class, not per node.

CPU-only pods hold no GPU and are left out (a policy may always leave them unplaced here).
Plain GPUs, whole and ``gpu-milli`` requests only (the openb traces); anything else raises
``ValueError``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.model import RequestKind
from extender.simulator.bound import arrived_at_capacity, node_classes, solve_packing
from extender.simulator.scenario import Scenario
from extender.units import MILLI

MAX_CONFIGURATIONS = 200_000
"""Refuse (``ValueError``) share mixes with more maximal configurations than this."""


@dataclass(frozen=True)
class ConfigBound:
    scenario: str
    seed: int
    gpus: int
    pods: int
    """Pods arrived when the arrived demand reaches 100 % of the GPUs."""
    lp_gpus: float
    """Upper bound on the GPU-equivalents allocated: the linear relaxation."""
    ip_gpus: float
    """Upper bound on the GPU-equivalents allocated: the integer program (its optimum, or
    HiGHS's dual bound when ``optimal`` is False)."""
    optimal: bool
    configurations: int
    seconds: float

    @property
    def lp_unallocated_pct(self) -> float:
        return round(100.0 - 100.0 * self.lp_gpus / max(self.gpus, 1), 4)

    @property
    def ip_unallocated_pct(self) -> float:
        """No policy leaves fewer GPUs unallocated at 100 % arrival than this."""
        return round(100.0 - 100.0 * self.ip_gpus / max(self.gpus, 1), 4)


def maximal_configurations(sizes: list[int], capacity: int = MILLI
                           ) -> npt.NDArray[np.int64]:
    """(n, len(sizes)) slots per size of every maximal multiset of ``sizes`` (ascending,
    distinct) summing to at most ``capacity``: no further size fits."""
    out: list[list[int]] = []
    smallest = sizes[0] if sizes else capacity + 1
    counts = [0] * len(sizes)

    def walk(i: int, left: int) -> None:
        if i < 0:
            if left < smallest:
                out.append(list(counts))
                if len(out) > MAX_CONFIGURATIONS:
                    raise ValueError(f"more than {MAX_CONFIGURATIONS} GPU configurations")
            return
        for n in range(left // sizes[i], -1, -1):
            counts[i] = n
            walk(i - 1, left - n * sizes[i])
        counts[i] = 0

    walk(len(sizes) - 1, capacity)
    return np.array(out, dtype=np.int64).reshape(len(out), len(sizes))


def config_bound(scenario: Scenario, *, seed: int = 42, inflate: float = 1.3,
                 time_limit: float = 120.0) -> ConfigBound:
    from scipy.sparse import coo_matrix

    started = time.perf_counter()
    arrived = arrived_at_capacity(scenario, seed, inflate)
    counts = np.bincount(arrived, minlength=len(scenario.kinds))
    platform = scenario.platform
    kinds = []
    for s in np.flatnonzero(counts):
        kind = scenario.kinds[int(s)]
        if not kind.gpu_pod:
            continue
        request = kind.request
        if request.kind not in (RequestKind.WHOLE, RequestKind.FRACTION):
            raise ValueError(f"the configuration bound does not model {request.kind.value} "
                             "requests")
        kinds.append((int(counts[s]), kind,
                      platform.placement_request(request, namespace=kind.namespace).allowed))
    sizes = sorted({k.request.milli for _, k, _ in kinds if k.request.kind is
                    RequestKind.FRACTION})
    slot_of = {v: i for i, v in enumerate(sizes)}
    configs = maximal_configurations(sizes)
    classes = list(node_classes(scenario.nodes).items())
    # columns: x[s, k] for the pairs that fit, then y[k, c] for classes that take a share
    entries: list[tuple[int, int, float]] = []  # (row, column, value)
    objective: list[float] = []
    upper: list[float] = []
    n_pods = len(kinds)
    column = 0
    upper += [float(n) for n, _, _ in kinds]
    row = n_pods
    for cls, nodes in classes:
        gpu_row, cpu_row, mem_row, big_row = row, row + 1, row + 2, row + 3
        slot_rows = row + 4
        row += 4 + len(sizes)
        upper += [float(nodes * cls.gpus), float(nodes * cls.cpu_milli),
                  float(nodes * cls.memory_mib), float(nodes)] + [0.0] * len(sizes)
        takes_share = False
        for i, (_, kind, allowed) in enumerate(kinds):
            request = kind.request
            whole = request.kind is RequestKind.WHOLE
            if not allowed[cls.type_index] or kind.cpu_milli > cls.cpu_milli or \
                    kind.memory_mib > cls.memory_mib or (whole and request.count > cls.gpus):
                continue
            entries += [(i, column, 1.0), (cpu_row, column, float(kind.cpu_milli)),
                        (mem_row, column, float(kind.memory_mib))]
            if whole:
                entries.append((gpu_row, column, float(request.count)))
                if request.count * 2 > cls.gpus:
                    entries.append((big_row, column, 1.0))
                objective.append(float(request.count))
            else:
                entries.append((slot_rows + slot_of[request.milli], column, 1.0))
                objective.append(request.milli / MILLI)
                takes_share = True
            column += 1
        if takes_share:
            for config in configs:
                entries.append((gpu_row, column, 1.0))
                entries += [(slot_rows + v, column, -float(m))
                            for v, m in enumerate(config) if m]
                objective.append(0.0)
                column += 1
    gpus = scenario.gpu_count
    if column == 0:
        return ConfigBound(scenario.name, seed, gpus, len(arrived), 0.0, 0.0, True,
                           len(configs), round(time.perf_counter() - started, 2))
    r, c, v = zip(*entries, strict=True)
    matrix = coo_matrix((v, (r, c)), shape=(row, column)).tocsr()
    lp_gpus, best, optimal = solve_packing(np.array(objective), matrix, np.array(upper), gpus,
                                           time_limit)
    return ConfigBound(scenario.name, seed, gpus, len(arrived), round(lp_gpus, 4),
                       round(best, 4), optimal, len(configs),
                       round(time.perf_counter() - started, 2))
