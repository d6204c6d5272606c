"""The exact cut: which feasible nodes can still win kube-scheduler's choice (pure).

kube-scheduler adds each extender priority (0-10) to a node's total as
``score x weight x (MaxNodeScore / MaxExtenderPriority)`` = ``score x weight x 10``
(``pkg/scheduler/schedule_one.go:1021``), and its in-tree score plugins add, per node, a sum of
``weight x (0..100)`` (``framework/runtime/framework.go:1420-1436``) that lies in
``[0, in_tree_max]``. The best node's total is at least ``best x weight x 10``; a node ``n`` with
``(best - p(n)) x weight x 10 > in_tree_max`` totals at most ``p(n) x weight x 10 +
in_tree_max``, strictly less: it is never the maximum, whatever the in-tree plugins say, so
``selectHost`` (the heap of ``schedule_one.go:1088-1091``, popped at ``:612``: highest total,
ties by a random number) can never pick it and leaving it out of filter's answer changes
nothing, **provided the kept nodes' in-tree scores do not depend on the set of nodes
passed** (``kube/score_inert.py`` says when; this module receives that verdict as
``refusal``) and the kept nodes get the same extender priorities as with the full list
(prioritize answers what filter scored: ``scheduling/cut.py``).

kube-scheduler treats a node filter neither passes nor fails as gone from this cycle
(``findNodesThatPassExtenders``, ``schedule_one.go:892-936``: the feasible list is replaced by
the answer's; only the failed maps get statuses), and skips prioritize when one node is left
(``:593-604``). So the cut keeps at least two nodes (the runner-up by priority joins a lone
winner): prioritize still runs and holds the chosen GPUs exactly as without the cut. It applies
only when a node passes (preemption sees the same failures as ever).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.kube.score_inert import CutReason

MAX_PRIORITY = 10
"""``extenderv1.MaxExtenderPriority``."""
MAX_NODE_SCORE = 100
"""``fwk.MaxNodeScore``: one plugin's normalised maximum."""


def priorities(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Strategy scores in [0, 100] -> extender priorities 0..10, rounding half up (what
    prioritize answers)."""
    return np.clip(np.floor(scores / 10.0 + 0.5), 0, MAX_PRIORITY).astype(np.int64)


def can_win(priority: npt.NDArray[np.int64], *, weight: int, in_tree_max: int
            ) -> npt.NDArray[np.bool_]:
    """Per node: not provably below the best (``(best - p) x weight x 10 <= in_tree_max``)."""
    if len(priority) == 0:
        return np.zeros(0, dtype=bool)
    gap = (int(priority.max()) - priority.astype(np.int64)) * weight * \
        (MAX_NODE_SCORE // MAX_PRIORITY)
    return np.asarray(gap <= in_tree_max)


@dataclass(frozen=True, eq=False)
class CutDecision:
    reason: CutReason
    kept: npt.NDArray[np.bool_] | None = None
    """Per feasible node, kept in the answer (``reason`` ``CUT`` only; else every node)."""


def decide(priority: npt.NDArray[np.int64], *, weight: int, in_tree_max: int,
           refusal: CutReason | None) -> CutDecision:
    """``priority``: the extender's priorities of the feasible nodes, in answer order;
    ``refusal``: why a plugin may be set-dependent (``None``: none is)."""
    if refusal is not None:
        return CutDecision(refusal)
    if len(priority) < 2:
        return CutDecision(CutReason.FEWER_THAN_TWO)
    kept = can_win(priority, weight=weight, in_tree_max=in_tree_max)
    if bool(kept.all()):
        return CutDecision(CutReason.NOTHING_TO_CUT)
    if int(kept.sum()) == 1:
        # A lone winner would skip prioritize (and its hold): keep the best of the rest too.
        rest = np.where(kept, -1, priority)
        kept = kept.copy()
        kept[int(np.argmax(rest))] = True
    return CutDecision(CutReason.CUT, kept)
