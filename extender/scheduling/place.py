"""Choose a node and its GPUs for one pod: the one placement step of the service and the
simulator.

``place`` scores the rows that fit, picks the best (``pick``: the service takes the first
maximum, the simulator may break ties its own way) and assigns GPUs there from the row's fit in
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
from extender.core.scoring.base import ScoreResult
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, RequestKind

Pick = Callable[[npt.NDArray[np.float64]], int]
"""Scores (n_fit,) -> the index of the chosen one."""


def first_best(scores: npt.NDArray[np.float64]) -> int:
    return int(np.argmax(scores))


@dataclass(frozen=True, eq=False)
class Placement:
    scores: ScoreResult
    row: int
    """The chosen snapshot row."""
    assignment: Assignment


def place(snapshot: ClusterSnapshot, request: PlacementRequest, fit: FitResult,
          scores: ScoreResult, *, pick: Pick = first_best, gpus: bool = True
          ) -> Placement | None:
    """Pick among ``scores`` (the strategy's scores of ``fit``) and assign GPUs there;
    ``None`` if no row fits. ``gpus=False``: the pod takes no GPU (the simulator's CPU-only
    pods), the node is all it gets."""
    if len(scores.rows) == 0:
        return None
    best = pick(scores.scores)
    row = int(scores.rows[best])
    if not gpus:
        return Placement(scores, row, Assignment(node=snapshot.node_names[row],
                                                 kind=RequestKind.WHOLE, grants=(),
                                                 generation=snapshot.generation))
    position = int(np.flatnonzero(fit.fits)[best])  # scores.rows: fit.rows that fit, in order
    assert int(fit.rows[position]) == row
    choice = int(scores.choice[best])
    assignment = assign(snapshot, request, row, units=fit.units[position],
                        order=[choice] if choice >= 0 else None)
    return Placement(scores, row, assignment)
