"""Scores computed ahead (``scheduling/speculation.py``): taken only when every input is the
same, permuted to the call's order, and then equal to a scoring done by the call itself; a
burst is answered byte for byte as without them."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from extender.core.fit import FitResult
from extender.core.reasons import Reason
from extender.core.request import PlacementRequest
from extender.core.scoring.base import ScoreResult, StrategyContext
from extender.core.scoring.cost_fragmentation import CostFragmentation
from extender.core.workload import Shape, WorkloadMix
from extender.inventory import ClusterSnapshot, Inventory
from extender.platform import Platform
from extender.scheduling.cycle import CycleTable
from extender.scheduling.evaluate import Evaluation, Evaluator
from extender.scheduling.prioritize import Scorer
from extender.scheduling.speculation import (
    BACKED_OFF_EVERY,
    UNUSED_BEFORE_BACKING_OFF,
    Speculation,
    SpeculationPace,
)
from tests.builders import make_pod
from tests.core.helpers import catalog, place, placement, random_cluster, request
from tests.scheduling.test_warm import REPLICAS, _burst, _counter, _service


def _result(rows: list[int]) -> ScoreResult:
    """Scores 10 x row and choice row % 4, so a permutation shows in both."""
    array = np.array(rows, dtype=np.int64)
    return ScoreResult(array, 10.0 * array, (array % 4).astype(np.int16))


def _fit(rows: list[int], fitting: list[int]) -> FitResult:
    array = np.array(rows, dtype=np.int64)
    code = np.where(np.isin(array, fitting), Reason.FITS, Reason.TOO_FEW_GPUS).astype(np.int8)
    return FitResult(rows=array, code=code, params=np.zeros((len(rows), 3), dtype=np.int64),
                     units=np.zeros((len(rows), 1), dtype=np.int16))


def _speculation(snapshot: ClusterSnapshot, preq: PlacementRequest,
                 fitting: list[int]) -> Speculation:
    return Speculation.of(snapshot, preq, ("model", 1.0), _fit(fitting, fitting),
                          _result(fitting))


@pytest.fixture
def small() -> tuple[ClusterSnapshot, PlacementRequest]:
    return random_cluster(np.random.default_rng(3), 8).snapshot(), \
        placement(request("whole", 1))


@pytest.mark.parametrize(("rows", "fitting", "expected"), [
    # the same rows fit, in another order, among rows that do not: permuted
    ([5, 0, 3, 1], [5, 0, 3], [5, 0, 3]),
    ([3, 0, 5], [3, 0, 5], [3, 0, 5]),
    # row 1 did not fit then: not these scores
    ([1, 0, 3], [1, 0, 3], None),
    # row 5 is missing
    ([0, 3], [0, 3], None),
    # row 0 twice, row 5 missing: same length, not the same set
    ([0, 3, 0], [0, 3], None),
    # nothing fits: nothing to take
    ([1, 2], [], None),
])
def test_the_scores_are_taken_for_the_same_set_of_fitting_rows_only(
        small: tuple[ClusterSnapshot, PlacementRequest], rows: list[int],
        fitting: list[int], expected: list[int] | None) -> None:
    snapshot, preq = small
    ahead = _speculation(snapshot, preq, [0, 3, 5])
    got = ahead.scores_for(_fit(rows, fitting))
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert got.rows.tolist() == expected
    assert got.scores.tolist() == [10.0 * r for r in expected]
    assert got.choice.tolist() == [r % 4 for r in expected]


def test_the_inputs_are_the_snapshot_object_the_request_and_the_key(
        small: tuple[ClusterSnapshot, PlacementRequest]) -> None:
    snapshot, preq = small
    ahead = _speculation(snapshot, preq, [0, 3, 5])
    assert ahead.holds_for(snapshot, preq, ("model", 1.0))
    # another request object, even one asking the same (a request is its object)
    assert not ahead.holds_for(snapshot, placement(request("whole", 1)), ("model", 1.0))
    assert not ahead.holds_for(snapshot, placement(request("whole", 2)), ("model", 1.0))
    assert not ahead.holds_for(snapshot, preq, ("model", 1.5))
    assert not ahead.holds_for(random_cluster(np.random.default_rng(3), 8).snapshot(), preq,
                               ("model", 1.0))


class _Cluster:
    """An inventory, a default strategy over a workload mix, and a scorer around it."""

    def __init__(self, platform: Platform) -> None:
        self.inventory: Inventory = random_cluster(np.random.default_rng(11), 16, fill=2.0)
        self.workload = WorkloadMix(memory_per_gpu=16384.0)
        self.strategy = CostFragmentation(StrategyContext(
            catalog(), platform.config.scoring, self.workload))
        self.scorer = Scorer(self.strategy)
        self.evaluator = Evaluator(platform, CycleTable(platform))
        self.names = self.inventory.node_names()
        self.preq = placement(request("whole", 1))

    def evaluate(self, names: list[str]) -> Evaluation:
        return self.evaluator.evaluate(self.inventory.snapshot(), self.preq, names)

    def fresh(self, platform: Platform, evaluation: Evaluation) -> ScoreResult:
        """The call's scores as a strategy that never scored ahead gives them."""
        other = CostFragmentation(StrategyContext(catalog(), platform.config.scoring,
                                                  self.workload))
        return other.score(evaluation.snapshot, self.preq, evaluation.fit)


def _by_row(result: ScoreResult) -> dict[int, tuple[float, int]]:
    return {int(r): (float(s), int(c)) for r, s, c in
            zip(result.rows, result.scores, result.choice, strict=True)}


def test_a_call_on_the_same_books_takes_the_scores_and_they_equal_its_own(
        platform: Platform) -> None:
    cluster = _Cluster(platform)
    cluster.scorer.speculate(cluster.preq, lambda: cluster.evaluate(cluster.names))
    assert cluster.scorer.speculated == 1
    call = cluster.evaluate(cluster.names[::-1])  # kube-scheduler's order changes per call
    taken = cluster.scorer.score(call.snapshot, cluster.preq, call.fit)
    assert cluster.scorer.taken_ahead == 1
    assert taken.rows.tolist() == call.fit.rows[call.fit.fits].tolist()
    assert _by_row(taken) == _by_row(cluster.fresh(platform, call))
    # the explanation of the node it chose reads the same terms as the call's own
    best = taken.rows[[int(np.argmax(taken.scores))]]
    own = Scorer(CostFragmentation(StrategyContext(catalog(), platform.config.scoring,
                                                   cluster.workload)))
    own.score(call.snapshot, cluster.preq, call.fit)
    assert cluster.scorer.explain(call.snapshot, cluster.preq, call.fit, best) == \
        own.explain(call.snapshot, cluster.preq, call.fit, best)


def test_a_hold_in_between_or_a_moved_mix_is_scored_by_the_call(
        platform: Platform) -> None:
    cluster = _Cluster(platform)
    scorer = cluster.scorer
    scorer.speculate(cluster.preq, lambda: cluster.evaluate(cluster.names))
    # a pod placed in between: a new snapshot, so the call scores itself
    evaluation = cluster.evaluate(cluster.names)
    row = int(evaluation.fit.rows[evaluation.fit.fits][0])
    place(cluster.inventory, request("whole", 1), cluster.names[row])
    call = cluster.evaluate(cluster.names)
    assert _by_row(scorer.score(call.snapshot, cluster.preq, call.fit)) == \
        _by_row(cluster.fresh(platform, call))
    # the mix learned a pod asking more memory per GPU: dS moved, so scored again
    scorer.speculate(cluster.preq, lambda: call)
    cluster.workload.observe(Shape(gpus=1), memory_mib=65536)
    assert _by_row(scorer.score(call.snapshot, cluster.preq, call.fit)) == \
        _by_row(cluster.fresh(platform, call))
    # another request on the same books
    scorer.speculate(cluster.preq, lambda: call)
    other = placement(request("whole", 2))
    two = cluster.evaluator.evaluate(call.snapshot, other, cluster.names)
    scorer.score(two.snapshot, other, two.fit)
    # a node list that leaves out a fitting node
    fewer = cluster.evaluate(cluster.names[:-3])
    scorer.score(fewer.snapshot, cluster.preq, fewer.fit)
    assert scorer.speculated == 3 and scorer.taken_ahead == 0


def test_a_strategy_that_fails_ahead_is_logged_and_the_call_scores_itself(
        platform: Platform, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    cluster = _Cluster(platform)
    evaluation = cluster.evaluate(cluster.names)
    score = cluster.strategy.score

    def broken(*args: object) -> ScoreResult:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(cluster.strategy, "score", broken)
    with caplog.at_level(logging.ERROR):
        cluster.scorer.speculate(cluster.preq, lambda: evaluation)
    assert "scoring ahead failed" in caplog.text and cluster.scorer.speculated == 0
    monkeypatch.setattr(cluster.strategy, "score", score)
    assert _by_row(cluster.scorer.score(evaluation.snapshot, cluster.preq, evaluation.fit)) \
        == _by_row(cluster.fresh(platform, evaluation))


@pytest.mark.parametrize("cut", [True, False])
def test_a_burst_is_answered_the_same_with_scores_taken_ahead(
        platform: Platform, cut: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    ahead_service, ahead_api = _service(platform, cut=cut)
    ahead = _burst(ahead_service, ahead_api, warm=True, fitted=[])
    own_service, own_api = _service(platform, cut=cut)
    monkeypatch.setattr(own_service.scheduler.scorer, "speculate", lambda *args: None)
    own = _burst(own_service, own_api, warm=True, fitted=[])
    assert ahead == own
    assert [a for a in ahead if isinstance(a, dict) and a.get("Error")] == []
    scorer = ahead_service.scheduler.scorer
    # from the second replica on, each warm scores ahead; a call takes those scores unless
    # a node filled up in between (the set of fitting rows changed)
    assert scorer.speculated >= REPLICAS - 2
    assert 0 < scorer.taken_ahead <= scorer.speculated
    assert _counter(ahead_service, "gpu_extender_scores_ahead_total") == scorer.speculated
    assert _counter(ahead_service, "gpu_extender_scores_taken_ahead_total") == \
        scorer.taken_ahead
    assert own_service.scheduler.scorer.taken_ahead == 0


@pytest.mark.parametrize("cut", [True, False])
def test_a_filter_on_the_list_the_warm_judged_takes_that_evaluation(
        platform: Platform, cut: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """kube-scheduler sends the same list again for most pods of a burst: a filter with the
    warm's request, names and snapshot takes the evaluation made ahead, and the burst is
    answered byte for byte as by a service that judges every call itself."""
    ahead_service, ahead_api = _service(platform, cut=cut)
    ahead = _burst(ahead_service, ahead_api, warm=True, fitted=[], repeat=4)
    own_service, own_api = _service(platform, cut=cut)
    monkeypatch.setattr(own_service.scheduler.scorer, "speculate", lambda *args: None)
    own = _burst(own_service, own_api, warm=True, fitted=[], repeat=4)
    assert ahead == own
    evaluator = ahead_service.scheduler.evaluator
    # a filter (or a prioritize asked about the same list) after the first replica of each
    # order takes the warm's evaluation, unless a hold or a filled node came in between
    assert evaluator.taken_ahead > 0
    assert _counter(ahead_service, "gpu_extender_evaluations_taken_ahead_total") == \
        evaluator.taken_ahead
    assert own_service.scheduler.evaluator.taken_ahead == 0


def test_an_evaluation_made_ahead_is_taken_for_exactly_its_inputs(platform: Platform) -> None:
    cluster = _Cluster(platform)
    cycles = CycleTable(platform)  # the evaluator's own table, as in the service
    evaluator, names = Evaluator(platform, cycles), list(cluster.names)
    snapshot = cluster.inventory.snapshot()
    ahead = evaluator.evaluate_ahead(snapshot, cluster.preq, names)
    cycle = cycles.cycle(make_pod("p").uid("uid-p").gpus(1).obj())
    # the same snapshot object, request object and names (another list, equal): taken, and
    # kept on the cycle as a fit it computed would be (prioritize slices it)
    assert evaluator.evaluate(snapshot, cluster.preq, list(names), cycle=cycle) is ahead
    assert evaluator.taken_ahead == 1
    assert cycle.fit is not None and cycle.fit.result is ahead.fit
    # anything else is judged by the call
    others = [
        (snapshot, cluster.preq, names[::-1]),  # another order
        (snapshot, cluster.preq, names[:-1]),  # fewer nodes
        (snapshot, placement(request("whole", 1)), names),  # an equal request, not it
        (random_cluster(np.random.default_rng(11), 16, fill=2.0).snapshot(), cluster.preq,
         names),  # equal books, another snapshot
        (snapshot, cluster.preq, [*names[:-1], "template-0"]),  # a node it does not know
    ]
    for other_snapshot, preq, other_names in others:
        judged = evaluator.evaluate(other_snapshot, preq, other_names)
        assert judged is not ahead
        fresh = Evaluator(platform, CycleTable(platform)).evaluate(other_snapshot, preq,
                                                                    other_names)
        assert judged.code.tolist() == fresh.code.tolist()
    assert evaluator.taken_ahead == 1


def test_the_pace_backs_off_after_unused_speculations_until_one_is_taken() -> None:
    pace = SpeculationPace()
    for _ in range(UNUSED_BEFORE_BACKING_OFF):  # 8 in a row that no call took
        assert pace.now()
        pace.ended(taken=False)
    # backed off: 15 chances let pass, the 16th taken
    assert [pace.now() for _ in range(BACKED_OFF_EVERY)] == \
        [False] * (BACKED_OFF_EVERY - 1) + [True]
    assert pace.skipped == BACKED_OFF_EVERY - 1
    pace.ended(taken=True)  # that one was used: every chance again
    assert all(pace.now() for _ in range(3))


def test_a_scorer_whose_speculations_go_unused_stops_judging_for_them(
        platform: Platform) -> None:
    """kube-scheduler sending each pod another subset of the nodes (adaptive
    ``percentageOfNodesToScore``): no call can take the scores, so after 8 the warm's
    evaluation and scoring run only once per 16 chances, until a call takes one again."""
    cluster = _Cluster(platform)
    scorer, judged = cluster.scorer, []

    def judge() -> Evaluation:
        judged.append(1)
        return cluster.evaluate(cluster.names)

    chances = UNUSED_BEFORE_BACKING_OFF + 2 * BACKED_OFF_EVERY
    for _ in range(chances):
        scorer.speculate(cluster.preq, judge)
        fewer = cluster.evaluate(cluster.names[:-3])  # never the same fitting rows
        scorer.score(fewer.snapshot, cluster.preq, fewer.fit)
    # 8 before backing off, then 1 of every 16 (32 chances: 2)
    assert len(judged) == scorer.speculated == UNUSED_BEFORE_BACKING_OFF + 2
    assert scorer.pace.skipped == chances - len(judged)
    # the next 16 chances run one, the last: a call on the same nodes takes it
    for _ in range(BACKED_OFF_EVERY):
        scorer.speculate(cluster.preq, judge)
    assert len(judged) == UNUSED_BEFORE_BACKING_OFF + 3
    call = cluster.evaluate(cluster.names)
    scorer.score(call.snapshot, cluster.preq, call.fit)
    assert scorer.taken_ahead == 1
    # used again: every chance runs
    for _ in range(3):
        scorer.speculate(cluster.preq, judge)
    assert len(judged) == UNUSED_BEFORE_BACKING_OFF + 6


def test_with_score_ahead_off_the_scorer_never_judges_ahead(platform: Platform) -> None:
    """``scoring.scoreAhead: false``: every call scores itself."""
    cluster = _Cluster(platform)
    scorer = Scorer(cluster.strategy, score_ahead=False)
    judged: list[int] = []

    def judge() -> Evaluation:
        judged.append(1)
        return cluster.evaluate(cluster.names)

    scorer.speculate(cluster.preq, judge)
    call = cluster.evaluate(cluster.names)
    assert _by_row(scorer.score(call.snapshot, cluster.preq, call.fit)) == \
        _by_row(cluster.fresh(platform, call))
    assert judged == [] and scorer.speculated == scorer.taken_ahead == 0
