"""Filter: which candidate nodes can host the pod, and why not the others.

Writes, all of them bookkeeping of the cycle (no GPU is taken here; when the answer is one
node, the exact cut after this step holds its GPUs, as prioritize would: ``cut.py``):

- starts (or continues) the pod's cycle: decodes the pod on its first call (``CycleTable``),
  which in offline mode also admits it to the offline cluster;
- releases holds whose TTL passed (``Expiry``, at most every 0.25 s);
- drops a stale prioritize-time hold of the very pod being filtered (kube is scheduling it
  again, so that hold is dead and must not count against it);
- keeps the fit on the cycle for prioritize (``PodCycle.fit``), and whether a node passed
  (``PodCycle.passed``: prioritize holds GPUs only for such a pod).

A pod the inventory holds as ``BOUND`` or ``OBSERVED`` (kube-scheduler retrying a cycle whose
bind answer it lost) is answered from its binding (``holds.bound_evaluation``): its node fits,
its own GPUs never count against it.

Nodes that are only full now go to ``FailedNodes`` (preemption may help), nodes that can never
host the pod to ``FailedAndUnresolvableNodes``: the caller groups ``Evaluation.code`` by message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.inventory.store import HoldingState, Inventory
from extender.scheduling.cycle import CycleTable, HoldEvents, PodCycle
from extender.scheduling.evaluate import Evaluation, Evaluator
from extender.scheduling.expiry import Expiry
from extender.scheduling.holds import api_holding, bound_evaluation
from extender.scheduling.outcome import Decision


@dataclass(frozen=True, eq=False)
class FilterOutcome:
    decision: Decision
    cycle: PodCycle
    evaluation: Evaluation | None = None
    """Set when nodes were judged (``FEASIBLE``, ``NO_FIT``)."""
    bound: bool = False
    """The pod is bound (answered from its binding: nothing to score or hold)."""


class Filter:
    def __init__(self, inventory: Inventory, cycles: CycleTable, evaluator: Evaluator,
                 expiry: Expiry, events: HoldEvents) -> None:
        self._inventory = inventory
        self._cycles = cycles
        self._evaluator = evaluator
        self._expiry = expiry
        self._events = events

    def __call__(self, pod_object: Mapping[str, Any], names: Sequence[str],
                 nodes: Sequence[Mapping[str, Any]] | None = None) -> FilterOutcome:
        """``nodes``: the Node objects of ``names`` when the call sent them."""
        cycle = self._cycles.cycle(pod_object)
        pod = cycle.pod
        if pod.error is not None:
            return FilterOutcome(Decision.INVALID_REQUEST, cycle)
        if pod.placement is None:
            return FilterOutcome(Decision.PASSTHROUGH, cycle)
        if not self._inventory.has_synced():
            return FilterOutcome(Decision.NOT_SYNCED, cycle)
        self._expiry.tick()
        bound = api_holding(self._inventory, pod.key.uid)
        if bound is not None:
            evaluation = bound_evaluation(self._inventory.snapshot(), names, bound.node)
        else:
            self._drop_stale_hold(cycle)
            evaluation = self._evaluator.evaluate(
                self._inventory.snapshot(), pod.placement, names,
                cycle=cycle if pod.key.uid else None, nodes=nodes)
        passed = bool(evaluation.fits.any())
        cycle.passed = passed
        return FilterOutcome(Decision.FEASIBLE if passed else Decision.NO_FIT, cycle,
                             evaluation, bound=bound is not None)

    def _drop_stale_hold(self, cycle: PodCycle) -> None:
        uid = cycle.pod.key.uid
        holding = self._inventory.holding(uid) if uid else None
        # expires_at None is a bind in flight (pinned): that one is alive.
        if holding is not None and holding.state is HoldingState.ASSUMED and \
                holding.expires_at is not None:
            self._inventory.forget(uid)
            cycle.held = None
            self._events.reservation("superseded")
