"""The arrival sequence: the trace shuffled, then inflated to a target GPU demand.

Details (FGD simulator, ``SortClusterPods`` and ``TunePodsByNodeTotalResource``)::

    order   = shuffle(pods sorted by name)
    target  = ratio * cluster GPU capacity                       (thousandths of a GPU)
    demand  = sum(num_gpu * gpu_milli over order)
    while demand < target:                                        (tune up)
        p = uniform pick, with replacement, from the trace
        if demand + total(p) > target: stop
        append p; demand += total(p)
    while demand > target: remove a uniform pick from order      (tune down, ratio < 1)

With ``ratio = 1.3`` the first ~98 % of capacity is the shuffled trace (the default trace asks
for 0.98 x capacity) and the rest is resampled. One difference from the Go code: it compares
the per-GPU share of the sampled pod with the remaining room (a slip that lets an 8-GPU pod
overshoot by 7 GPUs); here the pod's whole demand is compared, so the target is never passed.
Both stop at the first pod that does not fit, so the end differs by at most one pod.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def arrival_order(names: Sequence[str], demand_milli: npt.NDArray[np.int64],
                  capacity_milli: int, ratio: float, rng: np.random.Generator
                  ) -> npt.NDArray[np.int64]:
    """Indices into the trace in arrival order (resampled pods appear more than once).

    ``names``/``demand_milli``: per trace pod; ``ratio <= 0`` keeps the shuffled trace as is.
    """
    by_name = np.array(sorted(range(len(names)), key=lambda i: (names[i], i)), dtype=np.int64)
    order = by_name[rng.permutation(len(by_name))]
    if ratio <= 0 or len(order) == 0 or int(demand_milli.max(initial=0)) <= 0:
        return order  # nothing to tune (a CPU-only trace never reaches a GPU target)
    target = ratio * capacity_milli
    demand = int(demand_milli.sum())
    if demand < target:
        extra: list[int] = []
        while True:
            pick = int(by_name[rng.integers(len(by_name))])
            if demand + int(demand_milli[pick]) > target:
                break
            extra.append(pick)
            demand += int(demand_milli[pick])
        return np.concatenate([order, np.array(extra, dtype=np.int64)])
    kept = list(order)
    while demand > target and kept:
        drop = int(rng.integers(len(kept)))
        demand -= int(demand_milli[kept.pop(drop)])
    return np.array(kept, dtype=np.int64)
