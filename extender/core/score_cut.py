"""The exact cut: which feasible nodes can still win kube-scheduler's choice (pure).

kube-scheduler adds each extender priority (0-10) to a node's total as
``score x weight x (MaxNodeScore / MaxExtenderPriority)`` = ``score x weight x 10``
(``pkg/scheduler/schedule_one.go:1021``), and each in-tree score plugin adds ``weight x
(0..100)`` (``framework/runtime/framework.go:1420-1436``). For one pod, the in-tree totals of
two feasible nodes differ by at most ``in_tree_spread``: 100 x the weights of the plugins that
score each node alone, plus 100 x the weights of the set-dependent plugins that score this pod
(one that does not gives every node the same score: ``kube/score_inert.py``,
``ScoreCutConfig.in_tree_spread``). A node ``n`` with ``(best - p(n)) x weight x 10 >
in_tree_spread`` totals strictly less than the best node, whatever the in-tree plugins say, so
``selectHost`` (the heap of ``schedule_one.go:1088-1091``, popped at ``:612``: highest total,
ties by a random number) can never pick it.

Leaving such nodes out of filter's answer changes nothing when either

- **one node is left, a lone winner** (``LONE_WINNER``): kube-scheduler takes it without
  scoring (``schedule_one.go:593-604``), as it would have chosen it among all of them; filter
  then holds its GPUs itself (``scheduling/cut.py``), as prioritize would have; or
- **no set-dependent plugin scores the pod** (``refusal`` ``None``; ``CUT``): the kept nodes'
  in-tree scores do not depend on the set of nodes passed, and they get the same extender
  priorities as with the full list (prioritize answers what filter scored).

kube-scheduler treats a node filter neither passes nor fails as gone from this cycle
(``findNodesThatPassExtenders``, ``schedule_one.go:892-936``: the feasible list is replaced by
the answer's; only the failed maps get statuses). The cut applies only when a node passes
(preemption sees the same failures as ever).
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


def can_win(priority: npt.NDArray[np.int64], *, weight: int, in_tree_spread: int
            ) -> npt.NDArray[np.bool_]:
    """Per node: not provably below the best (``(best - p) x weight x 10 <= in_tree_spread``,
    the most the in-tree plugins can set two nodes apart for this pod)."""
    if len(priority) == 0:
        return np.zeros(0, dtype=bool)
    gap = (int(priority.max()) - priority.astype(np.int64)) * weight * \
        (MAX_NODE_SCORE // MAX_PRIORITY)
    return np.asarray(gap <= in_tree_spread)


@dataclass(frozen=True, eq=False)
class CutDecision:
    reason: CutReason
    kept: npt.NDArray[np.bool_] | None = None
    """Per feasible node, kept in the answer (``CUT`` and ``LONE_WINNER`` only; else every
    node)."""


def decide(priority: npt.NDArray[np.int64], *, weight: int, in_tree_spread: int,
           refusal: CutReason | None) -> CutDecision:
    """``priority``: the extender's priorities of the feasible nodes, in answer order;
    ``in_tree_spread``: the most the in-tree plugins can set two of them apart for this pod;
    ``refusal``: why a plugin may be set-dependent (``None``: none is). A lone winner is
    answered alone even then (``LONE_WINNER``: no in-tree score can change that choice)."""
    if len(priority) < 2:
        return CutDecision(CutReason.FEWER_THAN_TWO)
    kept = can_win(priority, weight=weight, in_tree_spread=in_tree_spread)
    if int(kept.sum()) == 1:
        return CutDecision(CutReason.LONE_WINNER, kept)
    if refusal is not None:
        return CutDecision(refusal)
    if bool(kept.all()):
        return CutDecision(CutReason.NOTHING_TO_CUT)
    return CutDecision(CutReason.CUT, kept)
