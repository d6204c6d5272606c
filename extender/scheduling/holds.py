"""What the verbs may do with a pod's holding: answer a bound pod from its binding, and keep
prioritize's tentative holds few.

Two rules of the holdings ladder (``inventory/store.py``, docs/ARCHITECTURE.md "Holdings") seen
from the verbs:

- **A bound pod is answered from its binding.** When kube-scheduler loses a bind's answer after
  the Binding went through, it forgets the pod and schedules it again. That retried cycle must
  not count the pod's own GPUs against it nor move them: filter answers its node feasible (and
  every other node "already bound"), prioritize scores its node alone and holds nothing, bind
  answers "already bound" on its node (``bind.py``).
- **Prioritize holds only what a filter of the same cycle passed, within a budget.** A hold is
  an optimization (the next cycle sees these GPUs taken before the bind lands); bind chooses
  under its lock without one. So a pod that did not pass this extender's filter in the same
  cycle (an invented request sent to ``/prioritize`` alone) gets none, and at most
  ``MAX_TENTATIVE_PER_NODE`` unpinned holds per node and ``MAX_TENTATIVE_PER_NAMESPACE`` per
  namespace (the source of the pods) exist at once; past them prioritize scores but does not
  hold. kube-scheduler has one pod between prioritize and bind per profile, so real traffic
  stays far below both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import repeat

import numpy as np
import numpy.typing as npt

from extender.core.fit import FitResult
from extender.core.reasons import Reason
from extender.core.rowops import flat_nonzero
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Holding, HoldingState, Inventory
from extender.scheduling.evaluate import Evaluation

MAX_TENTATIVE_PER_NODE = 2
"""Unpinned prioritize holds on one node at once (kube-scheduler: one per profile in flight)."""
MAX_TENTATIVE_PER_NAMESPACE = 8
"""Unpinned prioritize holds of one namespace's pods at once."""
BOUND_SCORE = 100.0


def api_holding(inventory: Inventory, uid: str) -> Holding | None:
    """The pod's holding if it is the API's (``BOUND`` or ``OBSERVED``): the pod is bound."""
    holding = inventory.holding(uid) if uid else None
    if holding is None or holding.state is HoldingState.ASSUMED:
        return None
    return holding


def bound_evaluation(snapshot: ClusterSnapshot, names: Sequence[str], node: str) -> Evaluation:
    """Filter's judgement of a bound pod: its own node fits (its GPUs are its own), every other
    node is ``BOUND_ELSEWHERE``; no fit kernel runs."""
    n = len(names)
    code = np.full(n, Reason.BOUND_ELSEWHERE, dtype=np.int8)
    code[np.fromiter((name == node for name in names), dtype=bool, count=n)] = Reason.FITS
    all_rows = np.fromiter(map(snapshot.node_index.get, names, repeat(-1)), dtype=np.int64,
                           count=n)
    known = flat_nonzero(all_rows >= 0)
    rows = all_rows[known]
    width = snapshot.free_mib.shape[1]
    fit = FitResult(rows=rows, code=code[known], params=np.zeros((len(rows), 3), np.int64),
                    units=np.zeros((len(rows), width), dtype=np.int16))
    return Evaluation(snapshot, names, code, np.zeros((n, 3), dtype=np.int64), fit, known)


def bound_scores(names: Sequence[str], node: str) -> npt.NDArray[np.float64]:
    """Prioritize's scores for a bound pod: its node alone."""
    return np.array([BOUND_SCORE if name == node else 0.0 for name in names], dtype=np.float64)


def within_budget(inventory: Inventory, uid: str, node: str, namespace: str) -> bool:
    """Whether one more unpinned hold on ``node`` for pod ``uid`` of ``namespace`` stays within
    the budget (the pod's own earlier hold, which the new one replaces, does not count);
    O(tentative holds), which this budget bounds."""
    tentative = [h for h in inventory.tentative_holds() if h.key.uid != uid]
    per_node = Counter(h.node for h in tentative)
    per_namespace = Counter(h.key.namespace for h in tentative)
    return per_node[node] < MAX_TENTATIVE_PER_NODE and \
        per_namespace[namespace] < MAX_TENTATIVE_PER_NAMESPACE
