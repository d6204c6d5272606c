"""The ``Explainer`` terms of the default strategy, cheapest-first and FGD, worked by hand.

Every case fixes the typical shapes (``set_shapes``) so that F can be computed on paper, in
thousandths of a GPU as in ``test_frag.py``, and shown in GPUs (/ 1000) by the terms. Nodes:

- ``used``: two T4s (16384 MiB), GPU 0 holds a 0.5 share, so free thousandths x = (500, 1000);
- ``idle``: two T4s, x = (1000, 1000);
- ``l4``: two idle L4s.

The workload mix is empty: no memory per GPU is known (dS = 0) and no shape names a type
(dC = 0), so loss = dF + dW x ``gapWeight`` (2, the default).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from extender.core.fit import fit
from extender.core.scoring.base import Explainer, NodeTerms, StrategyContext, deciding_term
from extender.core.scoring.registry import REGISTRY, make_strategy
from extender.core.workload import Shape
from extender.model import GpuRequest
from tests.core.helpers import catalog, inventory, node, place, placement, platform, request

WHOLE = {Shape(gpus=1, milli=1000): 1.0}
"""One whole GPU: a GPU with less than 1000 free is a fragment of its free thousandths."""
TWO_SHAPES = {Shape(gpus=1, milli=600): 0.5, Shape(gpus=1, milli=300): 0.5}
"""0.6 and 0.3 of a GPU, half each (``test_frag.TWO_SHAPES``)."""
T4, L4 = (float(catalog().price[next(iter(catalog().resolve(n)))]) for n in ("t4", "l4"))


def explain(strategy_name: str, shapes: dict[Shape, float], req: GpuRequest,
            nodes: tuple[str, ...], *, scored_first: bool = False,
            weights: dict[str, float] | None = None) -> list[NodeTerms]:
    """``strategy_name``'s terms of ``nodes``, in that order; ``scored_first``: after a
    ``score`` of the same fit, as after prioritize (the terms are then read out of that
    call's arrays, ``ScoredMemo``, and must be the same); ``weights`` over the defaults."""
    inv = inventory(node("used", "t4", 2), node("idle", "t4", 2), node("l4", "l4", 2))
    place(inv, request("fraction", milli=500), "used")  # GPU 0 of "used": x = (500, 1000)
    snap = inv.snapshot()
    scoring = platform().config.scoring
    scoring = dataclasses.replace(scoring, weights={**scoring.weights, **(weights or {})})
    strategy = make_strategy(strategy_name, StrategyContext(catalog(), scoring))
    strategy.frag.set_shapes(shapes)  # type: ignore[attr-defined]
    assert isinstance(strategy, Explainer)
    preq = placement(req, "platform")
    result = fit(snap, preq, snap.valid_rows())
    rows = np.array([snap.node_index[n] for n in nodes], dtype=np.int64)
    memo = getattr(strategy, "scored", None)
    if scored_first:
        strategy.score(snap, preq, result)
    explained = strategy.explain(snap, preq, result, rows)
    if memo is not None:  # read from the score's arrays exactly when there was a score
        assert memo.hits == int(scored_first)
    return explained


@dataclass(frozen=True)
class Case:
    strategy: str
    shapes: dict[Shape, float]
    request: GpuRequest
    nodes: tuple[str, str]
    expected: dict[str, dict[str, tuple[float, int | None]]]
    """Only the terms listed are checked."""
    decided_by: str
    """The first key term on which the first node beats the second."""


CASES = [
    pytest.param(Case(
        "cost-fragmentation", WHOLE, request("whole", 1), ("used", "idle"),
        {"used": {
            # F before = GPU 0's 500 (< 1000: a fragment) = 0.5 GPU; the pod takes GPU 1,
            # F after = 0.5 still: dF = 0, bucket ceil(0 / 0.04) = 0
            "fragmentation": (0.0, None), "loss": (0.0, 0),
            "idle node": (0.0, 0),  # GPU 0 holds a pod
            # idlePrice: the price key is the node's $/h x idle = 0 on a used node; the
            # value is what the pod takes: 1 GPU x the T4's $/h. On the idle node the key
            # is the node's $/h: 2 T4s x 0.53 = 1.06 -> 1060
            "price": (T4, 0)},
         "idle": {"fragmentation": (0.0, None), "loss": (0.0, 0), "idle node": (1.0, 1),
                  "price": (T4, round(2 * T4 * 1000))}},
        "idle node"), id="equal loss: the used node wins on consolidation"),
    pytest.param(Case(
        "cost-fragmentation", TWO_SHAPES, request("fraction", milli=300), ("used", "idle"),
        {"used": {
            # on GPU 0 (500 -> 200): the 0.6 shape loses 0.5 x 200, the 0.3 one 0.5 x 200:
            # F after 200 against F before 0.5 x 500 = 250 -> dF = -50 = -0.05 GPU, and
            # bucket ceil(-0.05 / 0.04) = ceil(-1.25) = -1 (GPU 1 would leave dF = 0)
            "fragmentation": (-0.05, None),
            # dW: the shares' fullest fill of 500 is 300 (W = 0.2), of 200 nothing (W =
            # 0.2): dW = 0, so the loss is dF's
            "unfillable leftover": (0.0, None), "loss": (-0.05, -1),
            "stranded memory": (0.0, None), "typed claim": (0.0, None)},
         # 1000 -> 700 on an idle T4: both shapes still fit GPU 0 (700 >= 600): dF = 0; but
         # the 700 left is filled at best by 600 (W = 0.1) where the whole GPU counted 0:
         # dW x gapWeight = 0.1 x 2 = 0.2, bucket ceil(0.2 / 0.04) = 5
         "idle": {"fragmentation": (0.0, None), "unfillable leftover": (0.2, None),
                  "loss": (0.2, 5)}},
        "loss"), id="a share fills the half-used GPU: dF -0.05 GPU, one bucket better"),
    pytest.param(Case(
        "cost-fragmentation", WHOLE, request("whole", 1, types=["t4", "l4"]), ("idle", "l4"),
        # the pod names two types of different prices: the price itself is a key term,
        # round($/h x 1000), on idle and used nodes alike
        {"idle": {"loss": (0.0, 0), "idle node": (1.0, 1), "price": (T4, round(T4 * 1000))},
         "l4": {"loss": (0.0, 0), "idle node": (1.0, 1), "price": (L4, round(L4 * 1000))}},
        "price"), id="t4|l4 on two idle nodes: the cheaper type"),
    pytest.param(Case(
        "cheapest-first", WHOLE, request("whole", 2), ("idle", "l4"),
        # price first, in cents of what the pod takes: 2 GPUs x $/h x 100
        {"idle": {"price": (2 * T4, round(2 * T4 * 100))},
         "l4": {"price": (2 * L4, round(2 * L4 * 100))}},
        "price"), id="cheapest-first: 2 T4s cost less than 2 L4s"),
    pytest.param(Case(
        "fgd", TWO_SHAPES, request("fraction", milli=300), ("used", "idle"),
        # dF as in the second case; score = floor(100 sigmoid(-dF)): sigmoid(0.05) = 0.5125
        # -> 51 on "used", sigmoid(0) = 0.5 -> 50 on "idle"; key = -score x 1000
        {"used": {"fragmentation": (-0.05, None), "score": (51.0, -51000)},
         "idle": {"fragmentation": (0.0, None), "score": (50.0, -50000)}},
        "score"), id="fgd: the same share, score 51 against 50"),
]


@pytest.mark.parametrize("scored_first", [False, True], ids=["alone", "after score"])
@pytest.mark.parametrize("case", CASES)
def test_explanation_terms(case: Case, scored_first: bool) -> None:
    explained = explain(case.strategy, case.shapes, case.request, case.nodes,
                        scored_first=scored_first)
    got = {n: {t.name: (round(t.value, 6), t.key) for t in terms}
           for n, terms in zip(case.nodes, explained, strict=True)}
    for name, expected in case.expected.items():
        for term, (value, key) in expected.items():
            assert got[name][term][0] == pytest.approx(value, abs=1e-6), (name, term)
            assert got[name][term][1] == key, (name, term)
    first, second = explained
    decided = deciding_term(first, second)
    assert decided is not None and decided.name == case.decided_by
    assert deciding_term(first, first) is None  # equal keys: a tie


RARE_FILLER = {Shape(gpus=1, milli=600): 0.49, Shape(gpus=1, milli=300): 0.49,
               Shape(gpus=1, milli=100): 0.02}
"""The two shapes above, and a 0.1 share held by 2 % of the share pods."""


@pytest.mark.parametrize(("gap_fillers", "unfillable"), [
    # default 0.03: 0.1 (2 % of the shares) fills nothing; 700 left, filled at best by 600:
    # W(700) = 0.1, dW x gapWeight = 0.1 x 2 = 0.2 (W = 0 before, on a whole free GPU)
    (None, 0.2),
    # 0.02: the 0.1 share counts (2 % >= 2 %), 600 + 100 fills the 700 exactly: dW = 0
    (0.02, 0.0),
    (0.0, 0.0),
])
def test_a_rare_share_size_fills_no_slice(gap_fillers: float | None, unfillable: float) -> None:
    weights = {} if gap_fillers is None else {"gapFillers": gap_fillers}
    (idle,) = explain("cost-fragmentation", RARE_FILLER, request("fraction", milli=300),
                      ("idle",), weights=weights)
    gap = next(t for t in idle if t.name == "unfillable leftover")
    assert gap.value == pytest.approx(unfillable)


def test_fragmentation_terms_say_before_and_after() -> None:
    (used,) = explain("cost-fragmentation", TWO_SHAPES, request("fraction", milli=300),
                      ("used",))
    frag = next(t for t in used if t.name == "fragmentation")
    # F before 250 thousandths = 0.25 GPU, after 200 = 0.2 GPU
    assert (frag.before, frag.after) == (pytest.approx(0.25), pytest.approx(0.2))


def test_the_default_strategy_and_fgd_explain_themselves() -> None:
    explainers = {name for name, cls in REGISTRY.items() if hasattr(cls, "explain")}
    assert {"cost-fragmentation", "cheapest-first", "fgd"} <= explainers
