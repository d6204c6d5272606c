"""The exact cut through the verbs (``scheduling/cut.py``, docs/score-cut.md): filter answers
only the nodes that can still win; a lone winner alone, held by filter as prioritize would
hold it without the cut; set-dependent plugins that put a second node within reach, or facts
not known yet, mean the full answer."""

from __future__ import annotations

import dataclasses
from typing import Any

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
    """Filter as the worker serves it: the answer, then the step after it (a one-node
    answer's hold, the warm)."""
    answer = service.verbs.filter(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=NAMES))
    service.verbs.warm_next()
    return list(answer.document()["NodeNames"])


def _prioritize(service: ExtenderService, pod: dict[str, Any], names: list[str]
                ) -> dict[str, int]:
    answer = service.verbs.prioritize(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=names))
    return {p["Host"]: p["Score"] for p in answer.document()}


def _cut_count(service: ExtenderService, reason: CutReason) -> float:
    value = service.metrics.registry.get_sample_value(
        "gpu_extender_score_cut_total", {"reason": reason.value})
    return value or 0.0


def _placed(service: ExtenderService) -> float:
    value = service.metrics.registry.get_sample_value(
        "gpu_extender_reservations_total", {"event": "placed"})
    return value or 0.0


def test_a_lone_winner_is_answered_alone_and_held_by_filter(platform: Platform) -> None:
    pod = make_pod("next").namespace("ml").uid("uid-next").gpus(1).obj()
    plain = _service(platform, enabled=False)
    full = _filter(plain, pod)
    assert full == NAMES
    full_scores = _prioritize(plain, pod, full)
    # the default ranks: the partly used t4-3 10 points, the next 9 ...: a one point lead
    # is 1,000, and with no set-dependent plugin scoring the in-tree plugins set two nodes
    # apart by 400 at most, so t4-3 always wins
    assert full_scores["t4-3"] == 10 and sorted(full_scores.values())[-2] == 9

    cut = _service(platform)
    assert _filter(cut, pod) == ["t4-3"]
    assert _cut_count(cut, CutReason.LONE_WINNER) == 1
    # kube-scheduler calls no prioritize for one node: filter held what prioritize would hold
    held = cut.inventory.holding("uid-next")
    reference = plain.inventory.holding("uid-next")
    assert held is not None and reference is not None
    assert held.assignment == reference.assignment
    assert _placed(cut) == _placed(plain) == 2  # the first pod's and this one's, in both
    # a prioritize that comes anyway answers the full list's score and holds nothing more
    assert _prioritize(cut, pod, ["t4-3"]) == {"t4-3": full_scores["t4-3"]}
    assert _placed(cut) == 2
    assert cut.inventory.holding("uid-next") is held


def test_a_replicasets_pod_is_answered_alone_too(platform: Platform) -> None:
    # PodTopologySpread's system defaults score it: 400 + 2 x 100 = 600 < 1,000
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1",
             "controller": True}
    pod = make_pod("next").namespace("ml").uid("uid-next").gpus(1).obj()
    pod["metadata"]["ownerReferences"] = [owner]
    service = _service(platform)
    assert _filter(service, pod) == ["t4-3"]
    assert _cut_count(service, CutReason.LONE_WINNER) == 1
    assert service.inventory.holding("uid-next") is not None


def test_several_set_dependent_plugins_keep_the_runner_up_in_reach(platform: Platform) -> None:
    # preferred node affinity, preferred pod anti-affinity and a Service's selector:
    # 400 + 2 x 100 x 3 = 1,000, and the runner-up is exactly 1,000 below: no cut at all
    spec = make_pod("p").gpus(1).obj()["spec"]
    pod = {**make_pod("p").namespace("ml").uid("u1").gpus(1).label("app", "web").obj(),
           "spec": {**spec, "affinity": {
               "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 1, "preference": {"matchExpressions": [
                       {"key": "x", "operator": "In", "values": ["y"]}]}}]},
               "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 1, "podAffinityTerm": {
                       "topologyKey": "kubernetes.io/hostname"}}]}}}}
    web = {"metadata": {"namespace": "ml", "name": "web"}, "spec": {"selector": {"app": "web"}}}
    service = _service(platform, services=[web])
    assert _filter(service, pod) == NAMES
    assert _cut_count(service, CutReason.PREFERRED_NODE_AFFINITY) == 1
    assert service.inventory.holding("u1") is None  # prioritize will come and hold


def test_the_only_node_that_fits_is_held_by_filter(platform: Platform) -> None:
    # the cut off: one feasible node still means no prioritize call, so filter holds it
    service = _service(platform, enabled=False)
    pod = make_pod("big").namespace("ml").uid("uid-big").gpus(7).obj()
    before = _cut_count(service, CutReason.FEWER_THAN_TWO)  # the setup's first pod
    answer = service.verbs.filter(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=["t4-3"]))
    assert answer.document()["NodeNames"] == ["t4-3"]
    # held once the answer is out (the worker's step after it), not before
    assert service.inventory.holding("uid-big") is None
    service.verbs.warm_next()
    held = service.inventory.holding("uid-big")
    assert held is not None and held.node == "t4-3"
    assert _cut_count(service, CutReason.FEWER_THAN_TWO) == before + 1


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
