"""Background threads yield the CPU to the thread that answers kube-scheduler (issue 22).

A serving process has one thread on kube-scheduler's critical path (the worker's event loop,
which answers filter and prioritize inline: ``runtime.direct``) and several whose work can
wait a few milliseconds: the watches, the event writer, the bind pool (kube-scheduler binds
asynchronously), the capacity publisher, the monitoring listener. Under Linux's default policy
a thread that wakes (a watch event arrives, a Binding's answer comes back) may preempt the
running one; in a Python process the woken thread then finds the GIL held, blocks again, and
the preempted thread resumes: two context switches and a cold cache for nothing. Measured
under kube-scheduler (``bench_scheduler --extender-core``, one core for the extender): the
event loop was preempted ~4 times per pod.

``SCHED_BATCH`` (``sched(7)``) is the policy for exactly this: the thread keeps its fair
share of the CPU and its nice value, but its wakeups never preempt another thread, so the
background work runs while the event loop waits for kube-scheduler's next request. Any
unprivileged thread may switch itself or a sibling to it (and a container's default seccomp
profile allows it); where the call is refused or missing (not Linux), the thread keeps the
default policy, which only costs the switches above.
"""

from __future__ import annotations

import logging
import os
import threading

_log = logging.getLogger(__name__)


def yield_on_wakeup(native_id: int = 0) -> bool:
    """Put the thread ``native_id`` (0: the calling one) under ``SCHED_BATCH``; ``False``
    where the system refuses or lacks it."""
    setter = getattr(os, "sched_setscheduler", None)
    policy = getattr(os, "SCHED_BATCH", None)
    if setter is None or policy is None:
        return False
    try:
        setter(native_id, policy, os.sched_param(0))
    except OSError as exc:  # a seccomp profile or a sandbox that refuses it
        _log.debug("background thread keeps the default policy", extra={"fields": {
            "thread": native_id, "error": str(exc)}})
        return False
    return True


def background_threads_yield() -> int:
    """Every live thread of this process but the calling one under ``SCHED_BATCH``: the
    process owner calls it from the thread that answers, once the service has started its
    threads. How many threads were switched."""
    me = threading.get_ident()
    switched = 0
    for thread in threading.enumerate():
        native_id = thread.native_id
        if thread.ident == me or native_id is None:
            continue
        switched += yield_on_wakeup(native_id)
    return switched
