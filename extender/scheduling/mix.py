"""Teach the ``WorkloadMix`` the pods that were placed, once each.

The default strategy scores by the request mix the cluster runs (FGD's target workload). Only a
validated request that was placed counts: bind reports the pods it bound, the sync path the
pods it sees bound (so a restart relearns the mix from the running pods, and pods another
scheduler placed count too). A pod reaches both ways (our bind, then its watch event), so the
UIDs already counted are remembered (the ``capacity`` most recent).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from extender.core.workload import WorkloadMix, shape_of
from extender.model import GpuRequest


class PlacedPods:
    def __init__(self, workload: WorkloadMix, *, capacity: int = 1 << 17) -> None:
        self._workload = workload
        self._capacity = capacity
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, None] = OrderedDict()

    def placed(self, uid: str, request: GpuRequest, cpu_milli: int, memory_mib: int) -> None:
        if not uid:
            return
        with self._lock:
            if uid in self._seen:
                return
            self._seen[uid] = None
            while len(self._seen) > self._capacity:
                self._seen.popitem(last=False)
        self._workload.observe(shape_of(request, cpu_milli), memory_mib=memory_mib)
