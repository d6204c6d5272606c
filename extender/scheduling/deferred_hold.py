"""The hold of a one-node filter answer, run once the answer is out (issue 22).

When filter answers one node, kube-scheduler calls no prioritize, so filter holds that node's
GPUs itself (``cut.py``): the next pod's filter must see them taken. Nothing in the answer
depends on the hold, and nobody can act on the answer before they have it, so the hold need
not delay it: ``DeferredHold`` keeps the cycle and runs its hold **after the answer is written**
(the worker's step after an answer, ``SchedulingVerbs.warm_next``, before it reads the
next request), and kube-scheduler's next cycle starts sooner (at 1,000 nodes the filter
answered in 1.57 ms against 1.88, medians of eight runs: benchmarks/README.md). The
hold is the same hold, on the same scoring and snapshot (``Prioritize.hold_cut``); its CPU is
the same too, only off the path kube-scheduler waits on (as the warm after an answer is).

What keeps it exact: **every verb runs a pending hold before it reads anything** (``run``: the
next filter, prioritize, bind, preemption, explain), so no verb can tell the hold from one made
inline. The bind of the pod itself may reach a pool thread before the event loop's step after
the answer: it runs the hold first, then binds the GPUs held, as before. ``run`` holds a lock
while the hold runs, so a hold runs exactly once and a second caller waits for it to end.

Lock order: ``DeferredHold._lock`` -> what the hold takes (``Inventory._lock``). Nothing calls
``run`` while holding another lock.
"""

from __future__ import annotations

import logging
import threading

from extender.scheduling.cut import Hold
from extender.scheduling.cycle import PodCycle

_log = logging.getLogger(__name__)


class DeferredHold:
    def __init__(self, hold: Hold) -> None:
        self._hold = hold
        self._lock = threading.Lock()
        self._pending: PodCycle | None = None
        self.after_answer = 0
        """Holds run once their answer was out (``gpu_extender_holds_after_answer_total``)."""
        self.before_verb = 0
        """Holds run by the next verb, the step after the answer not having come yet (the
        pod's own bind first on a pool thread, or a server without that step):
        ``gpu_extender_holds_before_verb_total``."""

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def defer(self, cycle: PodCycle) -> None:
        """Hold ``cycle``'s answered node once its answer is out (an earlier pending hold, if
        the step after its answer never came, is run first)."""
        with self._lock:
            self._run_locked(after_answer=False)
            self._pending = cycle

    def run(self, *, after_answer: bool = False) -> None:
        """The pending hold, if any, now (``after_answer``: from the step after the answer);
        while another thread runs it, wait for it to end."""
        # no lock on the common path: a hold is pending until it has run (a caller that
        # reads None here comes after it), and one deferred after this read belongs to an
        # answer not yet written
        if self._pending is None:
            return
        with self._lock:
            self._run_locked(after_answer=after_answer)

    def _run_locked(self, *, after_answer: bool) -> None:
        cycle = self._pending
        if cycle is None:
            return
        if after_answer:
            self.after_answer += 1
        else:
            self.before_verb += 1
        try:
            self._hold(cycle)
        except Exception:  # the verb that runs it may be another pod's: the bind chooses
            _log.exception("holding the answered node failed; its bind chooses the GPUs",
                           extra={"fields": {"pod": str(cycle.pod.key)}})
        finally:
            self._pending = None
