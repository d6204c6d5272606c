"""The scoring extension point: the protocol a strategy implements, nothing else.

A strategy ranks the nodes that fit (``score``) and may say which GPU it had in mind on each
(``choice``), so that the bind places the pod exactly where the score assumed. Scores are
floats in ``[0, MAX_SCORE]``; the wire layer rescales to the extender's 0..10.

Each strategy class declares, as class constants (kube's plugin ``Name``, scikit-learn's
``_parameter_constraints``): ``NAME`` (its registry key, written once), ``WEIGHTS`` (the
``scoring.weights`` keys it reads, with ranges and defaults: the config layer rejects any
other key) and ``NEEDS`` (what its caller must feed it; ``PLACEMENTS``: the caller reports
every placement through ``placed``). The registry (``registry.py``) sits above the strategies.
A strategy without state or weights inherits those constants and its constructor from
``StatelessStrategy``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.config.types import ScoringConfig, Weight
from extender.core.fit import FitResult
from extender.core.request import PlacementRequest
from extender.core.workload import WorkloadMix
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment

MAX_SCORE = 100.0

PLACEMENTS = "placements"
"""A need: the strategy's score depends on where earlier pods went (their classes), which the
snapshot's per-GPU arrays do not record; the caller must call ``placed`` after each bind."""


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

    def weights(self, declared: Mapping[str, Weight]) -> dict[str, float]:
        """The configured value of every declared weight, else its default (the config
        layer has already rejected undeclared keys and values out of range)."""
        given = self.scoring.weights
        return {key: float(given.get(key, weight.default)) for key, weight in declared.items()}


class Strategy(Protocol):
    """Ranks fitting nodes. Equal scores are broken at random by the caller (kube-scheduler
    in the service, the seeded RNG in the simulator)."""

    NAME: ClassVar[str]
    WEIGHTS: ClassVar[Mapping[str, Weight]]
    NEEDS: ClassVar[frozenset[str]]

    def __init__(self, context: StrategyContext) -> None: ...

    def score(self, snapshot: ClusterSnapshot, req: PlacementRequest,
              fit: FitResult) -> ScoreResult: ...


NO_WEIGHTS: Mapping[str, Weight] = MappingProxyType({})
"""``WEIGHTS`` of a strategy that reads no ``scoring.weights`` key (read-only)."""


class StatelessStrategy:
    """The shell of a strategy that keeps nothing between calls (kube's
    ``resourceAllocationScorer{Name, scorer}``): a subclass sets ``NAME`` and writes ``score``;
    it reads no weights and needs nothing from its caller unless it says so, and keeps its
    context as ``self.context``. The registry checks each subclass against ``Strategy``."""

    NAME: ClassVar[str]
    WEIGHTS: ClassVar[Mapping[str, Weight]] = NO_WEIGHTS
    NEEDS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, context: StrategyContext) -> None:
        self.context = context


@runtime_checkable
class PlacementObserver(Protocol):
    """A strategy that needs ``PLACEMENTS``: told where each pod went."""

    def placed(self, snapshot: ClusterSnapshot, req: PlacementRequest, row: int,
               assignment: Assignment) -> None: ...


@dataclass(frozen=True)
class Term:
    """One named part of a strategy's ranking of one node, in the units people think in.

    ``value`` is in ``unit`` (``GPU``: GPU-equivalents; ``$/h``: dollars per hour of what the
    pod takes; ``score``; ``order``: a position with no unit). ``before`` and ``after`` are
    set where the term is a change (fragmentation before and after the placement). ``key``:
    the integer this term contributes to the ranking key (smaller is better), ``None`` for a
    term shown for information only; key terms come in key order. ``decides``: the phrase
    for when this term is the first one where two nodes differ ("cheapest fitting type").
    """

    name: str
    value: float
    unit: str
    key: int | None = None
    before: float | None = None
    after: float | None = None
    decides: str = ""


NodeTerms = tuple[Term, ...]


@runtime_checkable
class Explainer(Protocol):
    """An optional extension of ``Strategy`` (as kube's plugins optionally implement
    ``EnqueueExtensions``): the named terms of the ranking key on a few rows.

    ``rows`` are snapshot rows that ``fit`` says fit; the answer has one ``NodeTerms`` per
    row, in that order. Called for ``explain`` and for the one chosen node (and its
    runner-up) at bind, never for every node: it may cost per row what ``score`` costs per
    cluster. Strategies without it are explained by their score alone."""

    def explain(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult,
                rows: npt.NDArray[np.int64]) -> list[NodeTerms]: ...


@runtime_checkable
class Refresher(Protocol):
    """An optional extension of ``Strategy``: bring what ``score`` keeps for ``req`` up to
    date with ``snapshot`` ahead of the next call (``scheduling.warm``: after an answer is
    sent, while kube-scheduler runs its own filters for the next pod). ``fit``: ``req``'s
    fit on the rows of ``snapshot`` that changed since the request's fit was last kept (any
    other row it needs, it fits itself). It must change no score: only do early what the next
    ``score`` on the same snapshot would do anyway."""

    def refresh(self, snapshot: ClusterSnapshot, req: PlacementRequest, fit: FitResult
                ) -> None: ...


@runtime_checkable
class Speculative(Protocol):
    """An optional extension of ``Strategy``: its scores may be computed ahead of the call
    that reads them (``scheduling.speculation``: the next pod of a burst, scored once an
    answer is out) and permuted to that call's order.

    ``speculation_key`` names every input of ``score`` that is neither the snapshot, nor the
    request, nor the fit (the default strategy's learned workload mix): two calls with the
    same snapshot object, equal requests and equal keys must score alike. The promise, checked
    for every strategy that has it (``tests/core/test_strategy_contract.py``): a fitting row's
    score and choice depend on the set of rows that fit, not on the order of the fit's rows
    nor on its rows that do not fit."""

    def speculation_key(self) -> Hashable: ...


def deciding_term(chosen: NodeTerms, other: NodeTerms) -> Term | None:
    """The first key term on which ``chosen`` and ``other`` differ (the one that ranked
    them), ``None`` if their keys are equal (a tie broken by the caller)."""
    others = {t.name: t for t in other if t.key is not None}
    for term in chosen:
        if term.key is None:
            continue
        rival = others.get(term.name)
        if rival is None or rival.key != term.key:
            return term
    return None
