"""Every built-in strategy, keyed on its own ``NAME`` (kube's ``NewInTreeRegistry``).

This module sits above the strategies and imports each one; no strategy imports it (they
import ``base``, ``helpers``, ``capacity``, ``rank`` and the fragmentation model), so there is
no import circle. Adding a strategy: one new module and
one entry in ``BUILTIN``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from extender.config.types import Weight
from extender.core.scoring.allocation import LeastAllocated, MostAllocated
from extender.core.scoring.base import Strategy, StrategyContext
from extender.core.scoring.baselines import DotProduct, GpuClustering, GpuPacking, RandomPlacement
from extender.core.scoring.best_fit import BestFit
from extender.core.scoring.cost_fragmentation import CheapestFirst, CostFragmentation
from extender.core.scoring.fgd import FGD

BUILTIN: tuple[type[Strategy], ...] = (
    CostFragmentation, CheapestFirst, FGD, BestFit, LeastAllocated, MostAllocated,
    DotProduct, GpuClustering, GpuPacking, RandomPlacement,
)


def _index(classes: tuple[type[Strategy], ...]) -> Mapping[str, type[Strategy]]:
    index: dict[str, type[Strategy]] = {}
    for cls in classes:
        if cls.NAME in index:
            raise ValueError(f"scoring strategy {cls.NAME!r} registered twice")
        index[cls.NAME] = cls
    return MappingProxyType(index)


REGISTRY: Mapping[str, type[Strategy]] = _index(BUILTIN)
"""Read-only: strategy name -> class."""


def strategy_names() -> list[str]:
    return sorted(REGISTRY)


def strategy_class(name: str) -> type[Strategy]:
    """The registered class; ``KeyError`` names the accepted ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"scoring strategy {name!r} is not registered; accepted: "
                       f"{', '.join(strategy_names())}") from None


def strategy_weights() -> Mapping[str, Mapping[str, Weight]]:
    """Name -> declared weights, for the config layer's checks."""
    return {name: cls.WEIGHTS for name, cls in REGISTRY.items()}


def make_strategy(name: str, context: StrategyContext) -> Strategy:
    """Build a registered strategy; ``KeyError`` names the accepted ones."""
    return strategy_class(name)(context)
