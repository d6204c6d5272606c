"""Periodic full relist: repairs whatever drift the watches let in, and counts it.

The relist is done by each watcher itself (``request_relist``), not beside it: a list applied
while a watch keeps running could undo an event newer than the list (resurrect a deleted pod).
The watcher lists, replaces its kind through ``Inventory.replace_all`` and resumes watching from
the new list, and reports what the list repaired here.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence

from extender.sync.watch import ResourceWatcher

_log = logging.getLogger(__name__)

RepairHook = Callable[[str, str, int], None]
"""``(kind, what, count)``, e.g. ``("pods", "pods_removed", 2)``."""


class Reconciler:
    def __init__(self, watchers: Sequence[ResourceWatcher], interval_seconds: float, *,
                 on_repairs: RepairHook | None = None) -> None:
        self._watchers = tuple(watchers)
        self._interval = interval_seconds
        self._on_repairs = on_repairs or (lambda kind, what, count: None)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.repairs: Counter[str] = Counter()
        """Totals per repair kind since start (``nodes_added``, ``pods_removed``...)."""
        self.rounds = 0

    def watch(self, *watchers: ResourceWatcher) -> None:
        """Add watchers to relist (they take ``record`` as their relist hook, so they exist
        after the reconciler)."""
        self._watchers += watchers

    def start(self) -> None:
        if self._interval <= 0:
            return
        self._thread = threading.Thread(target=self._run, name="reconcile", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def reconcile_now(self) -> None:
        """Ask every watcher to relist (asynchronously)."""
        self.rounds += 1
        for watcher in self._watchers:
            watcher.request_relist("reconcile")

    def record(self, kind: str, reason: str, repairs: dict[str, int]) -> None:
        """A watcher relisted (``RelistHook``): count what the list repaired."""
        drift = {what: count for what, count in repairs.items() if count}
        with self._lock:
            self.repairs.update(drift)
        for what, count in drift.items():
            self._on_repairs(kind, what, count)
        if drift:
            _log.warning("relist repaired drift", extra={"fields": {
                "resource": kind, "reason": reason, **drift}})

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.reconcile_now()
