"""Pods created at a fixed pace while kube-scheduler runs: bench_scheduler's ``--pace`` (issue 22).

The burst (every pod created before kube-scheduler starts) measures throughput: every process
runs flat out, and every latency in it (the bind's, the API server's Binding) is mostly a wait
for a core. Latency is measured the usual way instead, at a given load below saturation: pod
``i`` is created at ``start + i / pace``, whatever the creates before it cost (a small pool
sends them, so one slow create does not delay the next), and each pod's time from its create's
answer to the first moment it is seen bound is its scheduling latency (the queue, the filter,
the bind and the watch that shows it).

    creator = PacedCreator(create, names, pace=40.0)   # starts at once
    ...
    creator.stop()
    summary = latency_ms(creator.steady(0.05), bound_stamps)
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

SENDERS = 8
"""Creates in flight at most: enough for an API server answering in tens of milliseconds
under load at the paces the bench uses (tens of pods per second)."""


class PacedCreator:
    """Calls ``create(name)`` for each name at its slot, from a thread it owns.

    ``created``: the monotonic time each create answered (the pod is stored), by name;
    ``failed``: the names whose create raised, with the error. ``stop`` ends the schedule
    (the creates already sent finish) and waits for the thread."""

    def __init__(self, create: Callable[[str], None], names: Sequence[str], *,
                 pace: float) -> None:
        if not pace > 0 or math.isinf(pace):
            raise ValueError(f"pace: {pace!r} pods per second; a positive finite number is "
                             "accepted")
        self._create = create
        self._names = list(names)
        self._pace = pace
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self.created: dict[str, float] = {}
        self.failed: dict[str, str] = {}
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="paced-pods", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with ThreadPoolExecutor(SENDERS, thread_name_prefix="paced-create") as pool:
            for i, name in enumerate(self._names):
                wait = self.started + i / self._pace - time.monotonic()
                if self._stopped.wait(max(0.0, wait)):  # told to stop
                    return
                pool.submit(self._send, name)

    def _send(self, name: str) -> None:
        try:
            self._create(name)
        except Exception as error:  # reported with the run, never raised into the pool
            with self._lock:
                self.failed[name] = repr(error)
            return
        now = time.monotonic()
        with self._lock:
            self.created[name] = now

    def created_pace(self) -> float:
        """Pods per second created, from the first slot to the last create's answer (0 before
        two answered): at most the pace asked, and below it when the API server fell behind."""
        with self._lock:
            stamps = list(self.created.values())
        if len(stamps) < 2 or max(stamps) <= self.started:
            return 0.0
        return (len(stamps) - 1) / (max(stamps) - self.started)

    def steady(self, warmup_share: float) -> dict[str, float]:
        """``created`` without the pods of the first ``warmup_share`` of the slots: the first
        pods of a run wait for kube-scheduler's and the extender's first cycles (caches,
        connections), 60-200 ms each at 1,000 nodes, which would otherwise be the p99."""
        if not 0 <= warmup_share < 1:
            raise ValueError(f"warmup_share: {warmup_share!r}; a number in [0, 1) is accepted")
        skip = math.ceil(warmup_share * len(self._names))
        with self._lock:
            return {name: self.created[name] for name in self._names[skip:]
                    if name in self.created}

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 < q <= 1) of ``values`` by nearest rank: the smallest value with at
    least ``q`` of them at or below it."""
    if not values:
        raise ValueError("nearest_rank: no values")
    if not 0 < q <= 1:
        raise ValueError(f"q: {q!r}; a number in (0, 1] is accepted")
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))


def latency_ms(created: Mapping[str, float], bound: Mapping[str, float]
               ) -> dict[str, float]:
    """Created -> bound, in milliseconds, at ``QUANTILES`` over the pods that have both stamps
    (a pod seen bound before its create's answer arrived counts 0); ``{}`` when none has."""
    spans = [max(0.0, 1000 * (bound[name] - at)) for name, at in created.items()
             if name in bound]
    if not spans:
        return {}
    return {label: nearest_rank(spans, q) for label, q in QUANTILES}
