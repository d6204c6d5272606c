"""Publishes the share capacity (``core/capacity.py``) into ``status.capacity`` and
``status.allocatable`` of every GPU node the inventory models, so kube-scheduler's in-tree fit
and preemption dry run, the kubelet and the autoscalers can count VRAM shares and fractions.

One thread, owned by the service (``start``/``stop``). Every ``interval_s`` it compares the
inventory's figures with what it last wrote and merge-patches the nodes that differ (a node
gains, changes or loses them as the inventory does: an unhealthy GPU leaves the sum). Every
``resync_s`` it forgets what it wrote and writes every node again, which repairs a value someone
else changed. Failed patches are retried on the next round. Only the leader publishes
(``sync/leader.py``: the Lease ``gpu-extender-node-capacity`` in the extender's namespace);
``serve --publish-node-capacity`` turns the thread on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from extender.apiserver.client import NodeStatusWriter
from extender.apiserver.errors import KubeError, NotFound
from extender.core.capacity import ShareCapacity, share_capacity
from extender.inventory.store import Inventory

_log = logging.getLogger(__name__)


class CapacityPublisher:
    def __init__(self, inventory: Inventory, writer: NodeStatusWriter, *,
                 leader: Callable[[], bool] | None = None,
                 interval_s: float = 1.0, resync_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``leader``: asked every round (``LeaderLease.leading``); ``None``: always lead."""
        self._leader = leader
        self._inventory = inventory
        self._writer = writer
        self._interval = interval_s
        self._resync = resync_s
        self._clock = clock
        self._published: dict[str, ShareCapacity] = {}
        self._generation = -1
        self._last_resync = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.patches_total = 0
        self.failures_total = 0

    def publish(self) -> int:
        """One round: patch every node whose figures changed; returns the patches sent."""
        if not self._inventory.has_synced():
            return 0
        if self._leader is not None and not self._leader():
            self._published.clear()  # a new leader writes everything again when it takes over
            return 0
        if self._clock() - self._last_resync >= self._resync:
            self._published.clear()
            self._last_resync = self._clock()
        snapshot = self._inventory.snapshot()
        if snapshot.generation == self._generation and self._published:
            return 0
        wanted = share_capacity(snapshot)
        sent = 0
        failed = False
        for node, capacity in sorted(wanted.items()):
            if self._published.get(node) == capacity:
                continue
            quantities = capacity.quantities()
            try:
                self._writer.patch_node_status(node, {"capacity": quantities,
                                                      "allocatable": quantities})
            except NotFound:
                continue  # deleted since the snapshot: the watch will tell the inventory
            except KubeError as exc:
                failed = True
                self.failures_total += 1
                _log.warning("node capacity not published", extra={"fields": {
                    "node": node, "error": str(exc)}})
                continue
            self._published[node] = capacity
            self.patches_total += 1
            sent += 1
        for node in set(self._published) - set(wanted):
            del self._published[node]
        if not failed:
            self._generation = snapshot.generation
        return sent

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="capacity-publisher",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.publish()
            except Exception:  # keep publishing: one bad round must not end the thread
                _log.exception("capacity publisher round failed")
