"""The scoring extension point: one small protocol, strategies in a registry.

A strategy ranks the nodes that fit (``score``) and may say which GPU it had in mind on each
(``choice``), so that the bind places the pod exactly where the score assumed. Scores are
floats in ``[0, MAX_SCORE]``; the wire layer rescales to the extender's 0..10.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.config.types import ScoringConfig
from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.workload import WorkloadMix
from extender.inventory.snapshot import ClusterSnapshot

MAX_SCORE = 100.0


@dataclass(frozen=True, eq=False)
class ScoreResult:
    rows: npt.NDArray[np.int64]
    """(n_fit,) snapshot rows that fit, in the order of ``FitResult.rows``."""
    scores: npt.NDArray[np.float64]
    """(n_fit,) in [0, MAX_SCORE]; higher is better."""
    choice: npt.NDArray[np.int16]
    """(n_fit,) GPU slot the strategy would use first on each node (-1: default rules)."""


@dataclass
class StrategyContext:
    catalog: Catalog
    scoring: ScoringConfig
    workload: WorkloadMix = field(default_factory=WorkloadMix)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def weight(self, key: str, default: float) -> float:
        return float(self.scoring.weights.get(key, default))


class Strategy(Protocol):
    """Ranks fitting nodes. Equal scores are broken at random by the caller (kube-scheduler
    in the service, the seeded RNG in the simulator)."""

    name: str

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult: ...


StrategyFactory = Callable[[StrategyContext], Strategy]
_REGISTRY: dict[str, StrategyFactory] = {}


def register(name: str) -> Callable[[StrategyFactory], StrategyFactory]:
    def decorate(factory: StrategyFactory) -> StrategyFactory:
        if name in _REGISTRY:
            raise ValueError(f"scoring strategy {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory
    return decorate


def strategy_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def make_strategy(name: str, context: StrategyContext) -> Strategy:
    """Build a registered strategy; ``KeyError`` names the accepted ones."""
    _load_builtin()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"scoring strategy {name!r} is not registered; accepted: "
                       f"{', '.join(sorted(_REGISTRY))}") from None
    return factory(context)


def _load_builtin() -> None:
    """Import the strategy modules (each registers itself)."""
    from extender.core.scoring import (  # noqa: F401
        allocation,
        baselines,
        best_fit,
        cost_fragmentation,
        fgd,
    )


def fitting(fit: FitResult) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Positions (into ``fit.rows``) and snapshot rows of the nodes that fit."""
    positions = np.flatnonzero(fit.fits)
    return positions, fit.rows[positions]


def no_choice(n: int) -> npt.NDArray[np.int16]:
    return np.full(n, -1, dtype=np.int16)
