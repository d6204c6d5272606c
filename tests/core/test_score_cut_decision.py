"""The exact cut (``core/score_cut.py`` + ``kube/score_inert.py``) against a reference of
kube-scheduler's node choice (``tests/reference/kube_scoring.py``): whenever the decision cuts,
the set of nodes that can win is the same with and without the dropped nodes."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from extender.config.score_cut import ScoreCutConfig
from extender.config.score_cut.types import SET_DEPENDENT_PLUGINS
from extender.core.score_cut import can_win, decide, priorities
from extender.kube.score_inert import (
    CutReason,
    pod_refusal,
    prefer_no_schedule_taints,
    refusal,
    scoring_plugins,
    service_selector,
    set_dependent_reasons,
)
from tests.reference.kube_scoring import (
    IN_TREE_MAX,
    LOCAL_MAX,
    WEIGHTS,
    RefCluster,
    RefNode,
    winners,
)

WEIGHT = 100


CONFIG = ScoreCutConfig()
"""The default profile's weights, as the reference's (``IN_TREE_MAX``, ``LOCAL_MAX``)."""


def _scoring(pod: dict[str, Any], nodes: list[RefNode], cluster: RefCluster
             ) -> tuple[CutReason | None, frozenset[str]]:
    tainted = [t for t in (prefer_no_schedule_taints({"spec": {"taints": list(n.taints)}})
                           for n in nodes) if t]
    facts = {"tainted": tainted, "service_selectors": cluster.services,
             "pods_with_affinity": cluster.pods_with_affinity}
    reasons = set_dependent_reasons(pod, **facts)
    assert refusal(pod, **facts) == (reasons[0] if reasons else None)
    return refusal(pod, **facts), scoring_plugins(reasons)


def _decision(pod: dict[str, Any], nodes: list[RefNode], cluster: RefCluster, *,
              spread: int | None = None) -> Any:
    """What the extender decides, from the same objects the reference scores (``spread``:
    instead of the one the pod's scoring plugins give)."""
    reason, scoring = _scoring(pod, nodes, cluster)
    prio = np.array([n.priority for n in nodes], dtype=np.int64)
    return decide(prio, weight=WEIGHT, refusal=reason,
                  in_tree_spread=CONFIG.in_tree_spread(scoring) if spread is None else spread)


def test_the_default_weights_are_the_references() -> None:
    assert CONFIG.in_tree_score_max == IN_TREE_MAX
    assert CONFIG.node_local_score_max == LOCAL_MAX
    assert dict(CONFIG.set_dependent_weights) == WEIGHTS
    assert CONFIG.in_tree_spread(()) == 400
    # a ReplicaSet's pod: PodTopologySpread's system defaults score it, 400 + 2 x 100
    assert CONFIG.in_tree_spread({"PodTopologySpread"}) == 600
    assert CONFIG.in_tree_spread(WEIGHTS) == IN_TREE_MAX


@pytest.mark.parametrize(("prio", "spread", "kept"), [
    # every plugin scoring: gap x 100 x 10 <= 1,500: one point (1,000) may still win, two never
    ([9, 8, 6], IN_TREE_MAX, [True, True, False]),
    ([10, 10, 10], IN_TREE_MAX, [True, True, True]),
    ([10, 8, 0], IN_TREE_MAX, [True, False, False]),
    ([5], IN_TREE_MAX, [True]),
    # only the node-local plugins (400) and PodTopologySpread (200) scoring: 1,000 > 600,
    # one point is out of reach
    ([9, 8, 6], 600, [True, False, False]),
    ([9, 9, 8], 400, [True, True, False]),
])
def test_can_win_at_weight_100(prio: list[int], spread: int, kept: list[bool]) -> None:
    got = can_win(np.array(prio, dtype=np.int64), weight=WEIGHT, in_tree_spread=spread)
    assert got.tolist() == kept


def test_a_lone_winner_is_answered_alone() -> None:
    # 10 wins alone: 8 is 2 points (2,000) below, more than the in-tree 1,500 can make up
    decision = decide(np.array([3, 10, 8, 8], dtype=np.int64), weight=WEIGHT,
                      in_tree_spread=IN_TREE_MAX, refusal=None)
    assert decision.reason is CutReason.LONE_WINNER
    assert decision.kept is not None and decision.kept.tolist() == [False, True, False, False]


@pytest.mark.parametrize("why", [CutReason.CONTROLLER_OWNER, CutReason.SELECTED_BY_SERVICE,
                                 CutReason.PREFERRED_NODE_AFFINITY, CutReason.RESOURCE_CLAIMS])
def test_a_lone_winner_is_answered_alone_even_with_set_dependent_plugins(
        why: CutReason) -> None:
    # the winner's total >= 10 x 1,000 = 10,000; any other's <= 8 x 1,000 + 1,500 = 9,500,
    # whatever each plugin's normalisation over the nodes passed makes of its 0..100
    lone = decide(np.array([3, 10, 8], dtype=np.int64), weight=WEIGHT,
                  in_tree_spread=IN_TREE_MAX, refusal=why)
    assert lone.reason is CutReason.LONE_WINNER
    assert lone.kept is not None and lone.kept.tolist() == [False, True, False]
    # two within reach (9 is 1,000 below, < 1,500): the plugins may decide, so no cut
    near = decide(np.array([3, 10, 9], dtype=np.int64), weight=WEIGHT,
                  in_tree_spread=IN_TREE_MAX, refusal=why)
    assert near.reason is why and near.kept is None


@pytest.mark.parametrize(("prio", "reason"), [
    ([9], CutReason.FEWER_THAN_TWO),
    ([9, 8, 8], CutReason.NOTHING_TO_CUT),
    ([9, 9, 0], CutReason.CUT),
    ([9, 0], CutReason.LONE_WINNER),
])
def test_decide_outcomes(prio: list[int], reason: CutReason) -> None:
    got = decide(np.array(prio, dtype=np.int64), weight=WEIGHT, in_tree_spread=IN_TREE_MAX,
                 refusal=None)
    assert got.reason is reason


def test_priorities_round_half_up() -> None:
    assert priorities(np.array([0.0, 4.9, 5.0, 94.9, 95.0, 100.0])).tolist() == \
        [0, 0, 1, 9, 10, 10]


PREFERRED = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}


@pytest.mark.parametrize(("pod", "reason"), [
    ({"spec": {}}, None),
    ({"spec": {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}}}},
     CutReason.PREFERRED_NODE_AFFINITY),
    ({"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}}, None),
    ({"spec": {"affinity": {"podAntiAffinity": PREFERRED}}}, CutReason.PREFERRED_POD_AFFINITY),
    ({"spec": {"resourceClaims": [{"name": "gpu"}]}}, CutReason.RESOURCE_CLAIMS),
    ({"spec": {"topologySpreadConstraints": [{"whenUnsatisfiable": "ScheduleAnyway"}]}},
     CutReason.TOPOLOGY_SPREAD),
    # only hard constraints: no soft one, and the system defaults do not apply either
    ({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                        "controller": True}]},
      "spec": {"topologySpreadConstraints": [{"whenUnsatisfiable": "DoNotSchedule"}]}}, None),
    ({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                        "controller": True}]}, "spec": {}},
     CutReason.CONTROLLER_OWNER),
    # a Job's pods: DefaultSelector knows no Job
    ({"metadata": {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                        "controller": True}]}, "spec": {}}, None),
])
def test_pod_refusal(pod: dict[str, Any], reason: CutReason | None) -> None:
    assert pod_refusal(pod) is reason


@pytest.mark.parametrize(("service", "selector"), [
    ({"spec": {}}, None),  # nil: matches nothing
    ({"spec": {"selector": {}}}, None),  # empty: adds no label, the default selector stays empty
    ({"spec": {"selector": {"app": "x"}}}, {"app": "x"}),
])
def test_service_selector(service: dict[str, Any], selector: dict[str, str] | None) -> None:
    assert service_selector(service) == selector


def test_cluster_refusals_in_order() -> None:
    pod = {"metadata": {"labels": {"app": "x"}},
           "spec": {"tolerations": [{"key": "spot", "operator": "Exists"}]}}
    spot = prefer_no_schedule_taints({"spec": {"taints": [
        {"key": "spot", "effect": "PreferNoSchedule"}, {"key": "gpu", "effect": "NoSchedule"}]}})
    other = prefer_no_schedule_taints({"spec": {"taints": [
        {"key": "old", "effect": "PreferNoSchedule"}]}})
    assert refusal(pod, tainted=[spot], service_selectors=[], pods_with_affinity=0) is None
    assert refusal(pod, tainted=[spot, other], service_selectors=[], pods_with_affinity=0) is \
        CutReason.PREFER_NO_SCHEDULE_TAINT
    assert refusal(pod, tainted=[], service_selectors=[{"app": "y"}, {"app": "x"}],
                   pods_with_affinity=0) is CutReason.SELECTED_BY_SERVICE
    assert refusal(pod, tainted=[], service_selectors=[], pods_with_affinity=1) is \
        CutReason.POD_AFFINITY_IN_CLUSTER


def _worked_example() -> tuple[dict[str, Any], list[RefNode], RefCluster]:
    """Last session's example, weight 100: A 9 points, B 8, C 6. B's in-tree other than
    NodeAffinity: TaintToleration 3 x 100 (A has an untolerated PreferNoSchedule taint: 0),
    the node-local plugins 400, PodTopologySpread 2 x 100 (A's raw 10 is the maximum, B's 0 the
    minimum): 900; A's: 0. NodeAffinity raw A 0, B 1, C 10.
    With C: B = 8,000 + 900 + 2 x (100 x 1 // 10) = 8,920 < A = 9,000: A wins.
    Without C: the maximum is B's 1, B = 8,000 + 900 + 2 x 100 = 9,100 > 9,000: B wins."""
    pod = {"spec": {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b"]}]}},
            {"weight": 10, "preference": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["c"]}]}}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}]}}
    taint = {"key": "old", "effect": "PreferNoSchedule"}
    nodes = [RefNode("A", 9, {"tier": "a"}, (taint,), local=0, spread=10),
             RefNode("B", 8, {"tier": "b"}, (), local=400, spread=0),
             RefNode("C", 6, {"tier": "c"}, (), local=0, spread=5)]
    return pod, nodes, RefCluster()


def test_worked_example_flips_and_the_decision_refuses() -> None:
    pod, nodes, cluster = _worked_example()
    assert winners(pod, nodes, cluster, weight=WEIGHT) == {"A"}
    assert winners(pod, nodes[:2], cluster, weight=WEIGHT) == {"B"}
    # the arithmetic alone would drop C (3 points = 3,000 > 1,500) ...
    blind = decide(np.array([9, 8, 6], dtype=np.int64), weight=WEIGHT,
                   in_tree_spread=IN_TREE_MAX, refusal=None)
    assert blind.kept is not None and blind.kept.tolist() == [True, True, False]
    # ... the decision refuses, for the first set-dependent plugin it finds
    assert _decision(pod, nodes, cluster).reason is CutReason.PREFERRED_NODE_AFFINITY


def _random_pod(rng: random.Random) -> dict[str, Any]:
    labels = {"app": rng.choice(["x", "y"])}
    meta: dict[str, Any] = {"labels": labels}
    spec: dict[str, Any] = {}
    if rng.random() < 0.3:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "controller": True,
                                    "kind": rng.choice(["ReplicaSet", "Job", "StatefulSet"])}]
    if rng.random() < 0.25:
        spec["topologySpreadConstraints"] = [{"maxSkew": rng.randint(1, 3), "whenUnsatisfiable":
                                              rng.choice(["ScheduleAnyway", "DoNotSchedule"])}]
    affinity: dict[str, Any] = {}
    if rng.random() < 0.25:
        affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": [rng.choice("abc")]}]}}
            for _ in range(rng.randint(1, 2))]}
    if rng.random() < 0.15:
        affinity["podAffinity"] = PREFERRED
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "old", "operator": "Exists"}]
    if rng.random() < 0.1:
        spec["resourceClaims"] = [{"name": "c"}]
    return {"metadata": meta, "spec": spec}


def _random_case(rng: random.Random) -> tuple[dict[str, Any], list[RefNode], RefCluster]:
    best = rng.randint(2, 10)
    nodes = []
    for i in range(rng.randint(2, 9)):
        taints = ({"key": "old", "effect": "PreferNoSchedule"},) if rng.random() < 0.1 else ()
        nodes.append(RefNode(
            f"n{i}", max(0, best - rng.choice([0, 0, 1, 1, 2, 3, 5])),
            {"tier": rng.choice("abc")}, taints, local=rng.randint(0, 400),
            spread=rng.randint(0, 12), ipa=rng.randint(-10, 10), dra=rng.randint(0, 8)))
    services = tuple({"app": rng.choice(["x", "y"])} for _ in range(rng.randint(0, 1)))
    return _random_pod(rng), nodes, RefCluster(services, int(rng.random() < 0.15))


CASES = 6000


def test_whenever_the_decision_cuts_the_winners_are_the_same() -> None:
    rng = random.Random(22)
    cut: Counter[CutReason] = Counter()
    lone_set_dependent = 0
    for _ in range(CASES):
        pod, nodes, cluster = _random_case(rng)
        decision = _decision(pod, nodes, cluster)
        if decision.kept is None:
            continue
        cut[decision.reason] += 1
        lone_set_dependent += decision.reason is CutReason.LONE_WINNER and \
            pod_refusal(pod) is not None
        kept = [n for n, k in zip(nodes, decision.kept.tolist(), strict=True) if k]
        full = winners(pod, nodes, cluster, weight=WEIGHT)
        assert full <= {n.name for n in kept}, (pod, nodes, cluster)
        # one node left: kube-scheduler takes it without scoring (the reference scores it
        # alone, the same choice)
        assert winners(pod, kept, cluster, weight=WEIGHT) == full, (pod, nodes, cluster)
    # the test exercises both cuts, and lone winners of pods whose plugins are set-dependent
    assert cut[CutReason.CUT] > CASES // 50
    assert cut[CutReason.LONE_WINNER] > CASES // 20
    assert lone_set_dependent > CASES // 50


def test_scoring_plugins_agree_with_the_refusal() -> None:
    rng = random.Random(7)
    for _ in range(CASES // 4):
        pod, nodes, cluster = _random_case(rng)
        reason, scoring = _scoring(pod, nodes, cluster)
        assert (reason is None) == (not scoring), (pod, cluster)
        assert scoring <= set(SET_DEPENDENT_PLUGINS)


@pytest.mark.parametrize(("pod", "plugins"), [
    ({"spec": {}}, set()),
    ({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                        "controller": True}]}, "spec": {}},
     {"PodTopologySpread"}),
    ({"metadata": {"labels": {"app": "web"}}, "spec": {"resourceClaims": [{"name": "c"}],
      "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{}]}}}},
     {"PodTopologySpread", "DynamicResources", "NodeAffinity"}),
    # own hard constraints: no soft one and no system default, even selected by a Service
    ({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [
        {"whenUnsatisfiable": "DoNotSchedule"}]}}, set()),
])
def test_scoring_plugins(pod: dict[str, Any], plugins: set[str]) -> None:
    assert scoring_plugins(set_dependent_reasons(
        pod, tainted=[], service_selectors=[{"app": "web"}], pods_with_affinity=0)) == plugins


def test_a_runner_up_within_the_scoring_plugins_spread_is_kept() -> None:
    """The spread counts every plugin that scores the pod. A one point lead (1,000) is not a
    lone winner here: A 10 points, B 9; B's in-tree beats A's by 400 (node-local) + 300
    (TaintToleration: A has an untolerated PreferNoSchedule taint) + 200 (NodeAffinity: B
    matches the preferred term) + 200 (PodTopologySpread: B has the fewest matching pods) =
    1,100 > 1,000, so B wins. Spread 400 + 300 + 200 + 200 = 1,100: both can win, and the
    set-dependent plugins refuse the cut. Counting only the node-local 400 would answer A
    alone: the wrong node."""
    pod = {"spec": {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b"]}]}}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}]}}
    taint = {"key": "old", "effect": "PreferNoSchedule"}
    nodes = [RefNode("A", 10, {"tier": "a"}, (taint,), local=0, spread=10),
             RefNode("B", 9, {"tier": "b"}, (), local=400, spread=0)]
    cluster = RefCluster()
    assert winners(pod, nodes, cluster, weight=WEIGHT) == {"B"}
    assert _scoring(pod, nodes, cluster)[1] == {"TaintToleration", "NodeAffinity",
                                                "PodTopologySpread"}
    assert _decision(pod, nodes, cluster).kept is None
    blind = _decision(pod, nodes, cluster, spread=LOCAL_MAX)
    assert blind.reason is CutReason.LONE_WINNER and blind.kept.tolist() == [True, False]


def test_the_reference_flips_when_the_verdict_is_ignored() -> None:
    """The differential test can fail: cutting by the arithmetic alone, ignoring the verdict,
    changes the winners on some generated cases (set-dependent plugins at near ties)."""
    rng = random.Random(22)
    flips = 0
    for _ in range(CASES):
        pod, nodes, cluster = _random_case(rng)
        prio = np.array([n.priority for n in nodes], dtype=np.int64)
        blind = decide(prio, weight=WEIGHT, in_tree_spread=IN_TREE_MAX, refusal=None)
        if blind.kept is None:
            continue
        kept = [n for n, k in zip(nodes, blind.kept.tolist(), strict=True) if k]
        if winners(pod, kept, cluster, weight=WEIGHT) != winners(pod, nodes, cluster,
                                                                 weight=WEIGHT):
            flips += 1
            assert _decision(pod, nodes, cluster).kept is None
    assert flips > 0
