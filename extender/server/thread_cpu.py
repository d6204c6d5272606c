"""The extender process's CPU time by thread, read at scrape time.

Where a replica's CPU goes is the first question when kube-scheduler slows down with the
extender (issue 22): the verbs' loop (gunicorn's worker thread, which answers filter and
prioritize), the bind pool, the event writer (explanations and Events), each watch. Each
thread's time on a CPU is read from ``/proc/self/task/<native id>/schedstat`` (nanoseconds,
counted by the kernel at each switch; ``stat``'s sampled clock ticks where there is none;
``pthread_getcpuclockid`` would be as fine, but on a thread that ended between the listing
and the read it touches a freed descriptor) and summed by the thread's name, with a pool
worker's index dropped (``ThreadPoolExecutor-0_3`` counts as ``ThreadPoolExecutor-0``), so
the series stay few. A thread that has ended takes its time with it: the counter of a pool
whose threads exit can go down, which Prometheus reads as a reset. Where there is no
``/proc`` the family is empty.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

_WORKER_INDEX = re.compile(r"_\d+$")
_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_group(name: str) -> str:
    """``name`` without a pool worker's trailing ``_N``."""
    return _WORKER_INDEX.sub("", name)


def cpu_seconds_by_thread(threads: Iterable[threading.Thread] | None = None
                          ) -> dict[str, float]:
    """CPU seconds of each live thread of this process, summed by ``thread_group``; threads
    whose time cannot be read (ended meanwhile, or no ``/proc``) are left out."""
    totals: dict[str, float] = {}
    main = threading.main_thread()
    for thread in threading.enumerate() if threads is None else threads:
        # After a fork (gunicorn's workers) Python 3.11 keeps the parent's native id on the
        # thread that forked; it is the child's first thread, whose id is the process id.
        native = os.getpid() if thread is main else thread.native_id
        seconds = _thread_seconds(native) if thread.is_alive() else None
        if seconds is None:
            continue
        group = thread_group(thread.name)
        totals[group] = totals.get(group, 0.0) + seconds
    return totals


def _thread_seconds(native_id: int | None) -> float | None:
    """CPU seconds of the thread ``native_id`` of this process, ``None`` if unreadable:
    ``schedstat``'s time on a CPU (nanoseconds, counted at each switch), else ``stat``'s
    utime + stime (clock ticks, sampled)."""
    if native_id is None:
        return None
    task = f"/proc/self/task/{native_id}"
    try:
        with open(f"{task}/schedstat", "rb") as schedstat:
            return int(schedstat.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"{task}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    # fields after the command name, which may hold spaces and parentheses: ") S ppid ..."
    fields = text[text.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_SECOND


class ThreadCpuCollector(Collector):
    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "gpu_extender_thread_cpu_seconds",
            "CPU time of this process's live threads, by thread name (a pool's workers "
            "summed): MainThread answers filter and prioritize under gunicorn, the "
            "ThreadPoolExecutor the binds, event-writer the explanations and Events, "
            "watch-<resource> the watches.", labels=["thread"])
        for group, seconds in sorted(cpu_seconds_by_thread().items()):
            family.add_metric([group], seconds)
        yield family
