"""Choose a node and its GPUs for one pod: the one placement step of the service and the
simulator.

``place`` scores the rows that fit, picks the best (``pick``: by default the highest score,
equal scores going to the node whose name sorts first, so the choice depends on the nodes
themselves and never on the order kube-scheduler listed them or the inventory learned them;
the simulator may break ties its own way) and assigns GPUs there from the row's fit in
hand (no second fit). The caller holds the result in the inventory (``Inventory.assume``), whose
strict check still guards against a concurrent change since the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.assign import assign
from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.rowops import flat_nonzero
from extender.core.scoring.base import ScoreResult
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, RequestKind

Pick = Callable[[npt.NDArray[np.float64]], int]
"""Scores (n_fit,) -> the index of the chosen one."""


def first_best(scores: npt.NDArray[np.float64]) -> int:
    return int(np.argmax(scores))


def best_by_name(snapshot: ClusterSnapshot, scores: ScoreResult) -> int:
    """The highest score; among equal ones, the node whose name sorts first."""
    top = flat_nonzero(scores.scores == scores.scores.max())
    if len(top) == 1:
        return int(top[0])
    names = snapshot.node_names
    return int(min(top.tolist(), key=lambda i: names[int(scores.rows[i])]))


@dataclass(frozen=True, eq=False)
class Placement:
    scores: ScoreResult
    row: int
    """The chosen snapshot row."""
    assignment: Assignment


def place(snapshot: ClusterSnapshot, request: PlacementRequest, fit: FitResult,
          scores: ScoreResult, *, pick: Pick | None = None, gpus: bool = True
          ) -> Placement | None:
    """Pick among ``scores`` (the strategy's scores of ``fit``) and assign GPUs there;
    ``None`` if no row fits. ``gpus=False``: the pod takes no GPU (the simulator's CPU-only
    pods), the node is all it gets."""
    if len(scores.rows) == 0:
        return None
    best = best_by_name(snapshot, scores) if pick is None else pick(scores.scores)
    row = int(scores.rows[best])
    if not gpus:
        return Placement(scores, row, Assignment(node=snapshot.node_names[row],
                                                 kind=RequestKind.WHOLE, grants=(),
                                                 generation=snapshot.generation))
    position = int(flat_nonzero(fit.fits)[best])  # scores.rows: fit.rows that fit, in order
    assert int(fit.rows[position]) == row
    choice = int(scores.choice[best])
    assignment = assign(snapshot, request, row, units=fit.units[position],
                        order=[choice] if choice >= 0 else None)
    return Placement(scores, row, assignment)
