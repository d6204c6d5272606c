"""Split the machine's CPUs between the control plane and the extender (``bench_scheduler
--extender-core``): what the extender costs kube-scheduler when it has a core of its own, as
it does in a cluster (its own pod on its own node), rather than sharing two cores with the
API server, etcd and kube-scheduler as everything does on a 2-vCPU bench machine.

Linux keeps an affinity mask per thread, and a new thread or process starts with its
creator's. So the driver confines all its own threads to the control plane's CPUs before the
cluster starts (etcd, the API server, kube-scheduler and the extender inherit that), then moves
every thread of the extender's process tree to the other CPUs once it runs (the threads it
starts later inherit that). Every mode of a run is split the same way, ``plain`` and
``stock`` included (their second CPU idles), so the ratio compares one control plane core
with and without the extender beside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


class CoreSplitError(RuntimeError):
    """The machine cannot be split (one CPU, or affinity not allowed)."""


@dataclass(frozen=True)
class CoreSplit:
    control_plane: frozenset[int]
    extender: frozenset[int]

    @classmethod
    def of_this_machine(cls) -> CoreSplit:
        """The first CPU this process may use for the control plane, the rest for the
        extender."""
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise CoreSplitError(f"--extender-core needs at least 2 CPUs, this process may "
                                 f"use {len(cpus)}")
        return cls(frozenset(cpus[:1]), frozenset(cpus[1:]))

    @contextmanager
    def driver_on_control_plane(self) -> Iterator[None]:
        """This process's threads on the control plane's CPUs while the block runs (what it
        starts inherits them), back on every CPU they had after it."""
        everywhere = frozenset(os.sched_getaffinity(0))
        pin_threads([os.getpid()], self.control_plane)
        try:
            yield
        finally:
            pin_threads([os.getpid()], everywhere)

    def describe(self) -> str:
        return (f"the control plane, kube-scheduler and this driver on CPU "
                f"{_cpus(self.control_plane)}, the extender on CPU {_cpus(self.extender)}")


def pin_threads(pids: Iterable[int], cpus: frozenset[int]) -> int:
    """Confine every thread of each process to ``cpus``; how many threads were moved (a
    thread that ended meanwhile is skipped)."""
    moved = 0
    for pid in pids:
        for task in _tasks(pid):
            try:
                os.sched_setaffinity(task, cpus)
            except ProcessLookupError:
                continue
            moved += 1
    return moved


def _tasks(pid: int) -> list[int]:
    try:
        return [int(name) for name in os.listdir(Path("/proc") / str(pid) / "task")]
    except FileNotFoundError:
        return []


def _cpus(cpus: frozenset[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))
