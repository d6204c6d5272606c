"""The preempt verb as HTTP sees it: ``PreemptionArgs`` in, ``ExtenderPreemptionResult`` out,
the outcome and the victims counted. What the decision is lives in ``scheduling/preempt.py``
and ``core/preempt.py``."""

from __future__ import annotations

from collections.abc import Callable

from extender.scheduling.preempt import Preempt
from extender.server.answers import Answer, encode_document
from extender.server.metrics import ExtenderMetrics
from extender.server.preempt_wire import PreemptionArgs, preemption_result

NO_VICTIMS = Answer(b'{"NodeNameToMetaVictims":{}}')


class PreemptVerb:
    def __init__(self, preempt: Preempt, metrics: ExtenderMetrics, *,
                 before: Callable[[], None] | None = None) -> None:
        """``before``: run ahead of each call (the scheduler's pending one-node hold)."""
        self._preempt = preempt
        self._metrics = metrics
        self._before = before

    def __call__(self, args: PreemptionArgs) -> Answer:
        if self._before is not None:
            self._before()
        outcome = self._preempt(args.pod, args.victims)
        self._metrics.decision("preempt", outcome.decision.value)
        for node in outcome.nodes:
            self._metrics.preemption_node(node.drop.name.lower() if node.drop else "victims",
                                          len(node.victims))
        return encode_document(preemption_result(
            {n.node: n.victims for n in outcome.nodes if n.drop is None}))
