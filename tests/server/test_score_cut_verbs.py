"""The exact cut through the verbs (``scheduling/cut.py``, docs/score-cut.md): filter answers
only the nodes that can still win; prioritize of the kept names answers the priorities of the
full list and holds the same node as without the cut; any set-dependent plugin, or facts not
known yet, means the full answer."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from extender.config.score_cut import ScoreCutConfig
from extender.kube.score_inert import CutReason
from extender.platform import Platform, build_platform
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs
from extender.sync.score_facts import ScoreFacts
from tests.builders import make_pod
from tests.sync.clusters import t4_node
from tests.sync.fake_api import FakeApiServer

NAMES = [f"t4-{i}" for i in range(6)]


def _service(platform: Platform, *, enabled: bool = True, listed: bool = True,
             services: list[dict[str, Any]] | None = None) -> ExtenderService:
    if not enabled:
        platform = build_platform(dataclasses.replace(
            platform.config, score_cut=ScoreCutConfig(enabled=False)))
    first = make_pod("first").namespace("ml").uid("uid-first").gpus(1).obj()
    api = FakeApiServer([t4_node(n, gpus=8) for n in NAMES], [first])
    facts = ScoreFacts()
    service = ExtenderService(platform, api, facts=facts)
    nodes, pods = api.list_objects("nodes").items, api.list_objects("pods").items
    service.applier.replace_nodes(nodes)
    service.applier.replace_pods(pods)
    if listed:
        facts.replace_nodes(nodes)
        facts.replace_pods(pods)
        facts.replace_services(services or [])
    service.inventory.mark_synced()
    # one pod bound on t4-3: the bin-packing default now prefers that partly used node
    args = ExtenderArgs(Pod=first, Nodes=None, NodeNames=["t4-3"])
    assert service.verbs.filter(args).document()["NodeNames"] == ["t4-3"]
    assert service.verbs.bind({"PodName": "first", "PodNamespace": "ml", "PodUID": "uid-first",
                               "Node": "t4-3"}).document()["Error"] == ""
    return service


def _filter(service: ExtenderService, pod: dict[str, Any]) -> list[str]:
    answer = service.verbs.filter(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=NAMES))
    return list(answer.document()["NodeNames"])


def _prioritize(service: ExtenderService, pod: dict[str, Any], names: list[str]
                ) -> dict[str, int]:
    answer = service.verbs.prioritize(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=names))
    return {p["Host"]: p["Score"] for p in answer.document()}


def _cut_count(service: ExtenderService, reason: CutReason) -> float:
    value = service.metrics.registry.get_sample_value(
        "gpu_extender_score_cut_total", {"reason": reason.value})
    return value or 0.0


def test_the_cut_keeps_the_winner_and_prioritize_answers_the_full_lists_scores(
        platform: Platform) -> None:
    pod = make_pod("next").namespace("ml").uid("uid-next").gpus(1).obj()
    plain = _service(platform, enabled=False)
    full = _filter(plain, pod)
    assert full == NAMES
    full_scores = _prioritize(plain, pod, full)

    cut = _service(platform)
    kept = _filter(cut, pod)
    assert "t4-3" in kept and len(kept) < len(NAMES)
    assert _cut_count(cut, CutReason.CUT) == 1
    # every node left out is more than 1,500 / 1,000 points below the best
    best = max(full_scores.values())
    assert all(best - full_scores.get(n, 0) >= 2 for n in NAMES if n not in kept)
    # the kept nodes get the priorities they have in the full list; the same node is held
    assert _prioritize(cut, pod, kept) == {n: s for n, s in full_scores.items() if n in kept}
    # in another order (kube-scheduler's list is its own): the same scores, by name
    again = _service(platform)
    assert _prioritize(again, pod, _filter(again, pod)[::-1]) == \
        {n: s for n, s in full_scores.items() if n in kept}
    held = cut.inventory.holding("uid-next")
    reference = plain.inventory.holding("uid-next")
    assert held is not None and reference is not None
    assert held.assignment == reference.assignment


@pytest.mark.parametrize(("pod", "reason"), [
    (make_pod("p").namespace("ml").uid("u1").gpus(1).label("app", "web").obj(),
     CutReason.SELECTED_BY_SERVICE),
    ({**make_pod("p").namespace("ml").uid("u2").gpus(1).obj(), "spec": {
        **make_pod("p").gpus(1).obj()["spec"], "affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
                "matchExpressions": [{"key": "x", "operator": "In", "values": ["y"]}]}}]}}}},
     CutReason.PREFERRED_NODE_AFFINITY),
])
def test_a_set_dependent_plugin_means_the_full_answer(
        platform: Platform, pod: dict[str, Any], reason: CutReason) -> None:
    web = {"metadata": {"namespace": "ml", "name": "web"}, "spec": {"selector": {"app": "web"}}}
    service = _service(platform, services=[web])
    assert _filter(service, pod) == NAMES
    assert _cut_count(service, reason) == 1


def test_no_cut_before_the_facts_are_listed(platform: Platform) -> None:
    service = _service(platform, listed=False)
    pod = make_pod("next").namespace("ml").uid("uid-next").gpus(1).obj()
    assert _filter(service, pod) == NAMES
    assert _cut_count(service, CutReason.FACTS_UNKNOWN) == 1


def test_facts_follow_the_events() -> None:
    facts = ScoreFacts()
    assert not facts.known()
    facts.replace_nodes([])
    facts.replace_pods([])
    facts.replace_services([])
    assert facts.known()
    tainted = {"metadata": {"name": "n1"}, "spec": {"taints": [
        {"key": "k", "effect": "PreferNoSchedule"}]}}
    facts.node_event("ADDED", tainted)
    assert len(facts.tainted_among(["n0", "n1"])) == 1
    facts.node_event("MODIFIED", {"metadata": {"name": "n1"}, "spec": {}})
    assert facts.tainted_among(["n1"]) == []
    affine = {"metadata": {"uid": "a", "namespace": "ml", "name": "a"},
              "spec": {"affinity": {"podAntiAffinity": {"requiredDuringScheduling"
                                                        "IgnoredDuringExecution": [{}]}}}}
    facts.pod_event("ADDED", affine)
    assert facts.pods_with_affinity() == 1
    facts.pod_event("MODIFIED", {**affine, "status": {"phase": "Succeeded"}})
    assert facts.pods_with_affinity() == 0
    service = {"metadata": {"namespace": "ml", "name": "s"}, "spec": {"selector": {"a": "b"}}}
    facts.service_event("ADDED", service)
    assert facts.selectors("ml") == [{"a": "b"}] and facts.selectors("other") == []
    facts.service_event("DELETED", service)
    assert facts.selectors("ml") == []
