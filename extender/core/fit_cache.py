"""The fit of the last few requests on every snapshot row, brought up to date row by row.

The pods of a burst share one ``PlacementRequest`` object (``scheduling.pod_memo``: a
Deployment's replicas decode once), and between two of their filters the inventory changes a
row or two (the previous pod's hold). ``fit`` is a per-row function of the snapshot's rows, so
the snapshot's ``RowCache`` machinery (``node_version``) recomputes only the rows that changed
since the request's last fit, and the kernel runs on one row instead of a thousand.

Keyed by the request's identity, whether the snapshot has DRA nodes (the one input of the
kernel that is not a row's) and the snapshot's own row cache (rows' versions count within one
inventory only); used where the candidates cover most of the snapshot (a filter over
the cluster), else ``fit`` runs as before. ``fit`` reads nothing of a row but its content, so
a changed row whose content the request was fitted on before (another node of the same pool
in the same state) is looked up, not fitted (``RowCache``, by content). Equal to ``fit`` on
every snapshot (``tests/core/test_fit_cache.py``).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult, fit
from extender.core.request import PlacementRequest
from extender.inventory.snapshot import ClusterSnapshot, Derived, RowCache, RowFunction

DEFAULT_REQUESTS = 8
"""Requests kept: each holds (n_nodes, 3 + n_gpus) numbers (~40 KB at 1,000 nodes)."""


class FitCache:
    """``fit`` with the last ``requests`` requests' fits on every row kept (thread-safe: the
    cache's lock; the kernel on stale rows runs under it)."""

    def __init__(self, *, check_cpu_memory: bool = False,
                 requests: int = DEFAULT_REQUESTS) -> None:
        self._check_cpu_memory = check_cpu_memory
        self._cache = RowCache(max_keys=requests)

    def fit(self, snapshot: ClusterSnapshot, req: PlacementRequest,
            rows: npt.NDArray[np.int64]) -> FitResult:
        """``core.fit.fit(snapshot, req, rows)``."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) * 2 < snapshot.n_nodes:
            return fit(snapshot, req, rows, check_cpu_memory=self._check_cpu_memory)
        code, params, units = self._cache.use(
            self._key(snapshot, req), snapshot, self._compute(req),
            lambda arrays: tuple(a.take(rows, axis=0) for a in arrays),
            by_content=True)
        return FitResult(rows=rows, code=code, params=params, units=units)

    def refresh(self, snapshot: ClusterSnapshot, req: PlacementRequest) -> FitResult | None:
        """Bring ``req``'s kept fit up to date with ``snapshot``: its fit on the rows that
        changed (``rows``, possibly none); ``None`` (nothing computed) if no call kept it
        (``RowCache.refresh``)."""
        key, compute = self._key(snapshot, req), self._compute(req)
        changed = self._cache.refresh(key, snapshot, compute,
                                      by_content=True)
        if changed is None:
            return None
        code, params, units = self._cache.derive(key, snapshot, compute, changed)
        return FitResult(rows=changed, code=code, params=params, units=units)

    @property
    def content_hits(self) -> int:
        """Changed rows whose fit was found by their content, not computed."""
        return self._cache.content_hits

    @staticmethod
    def _key(snapshot: ClusterSnapshot, req: PlacementRequest) -> Hashable:
        return req, bool(snapshot.node_dra.shape[0]), snapshot.cache

    def _compute(self, req: PlacementRequest) -> RowFunction:
        check = self._check_cpu_memory

        def compute(snap: ClusterSnapshot, stale: npt.NDArray[np.int64]) -> Derived:
            result = fit(snap, req, stale, check_cpu_memory=check)
            return result.code, result.params, result.units

        return compute
