"""The shadow's "would have placed" is the extender's own choice: ``Scheduler.judge`` and
prioritize's hold both come from ``place`` (the highest strategy score, equal scores to the
node whose name sorts first), never from the 0..10 wire priorities or the order the nodes
were listed in."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.shadow.record import ShadowRecord
from extender.shadow.service import ShadowService
from extender.sync.offline import ClusterObjects
from tests.builders import make_node, make_pod


def with_strategy(platform: Platform, name: str) -> Platform:
    config = platform.config
    return replace(platform, config=replace(config, scoring=replace(config.scoring,
                                                                    strategy=name)))


def t4_node(name: str, gpus: int) -> dict[str, Any]:
    return make_node(name).gfd("Tesla-T4", count=gpus).allocatable(gpu=gpus).obj()


def busy(name: str, node: str, gpus: int) -> dict[str, Any]:
    pod = make_pod(name).uid(name).gpus(gpus).obj()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def extender_hold(platform: Platform, nodes: list[dict[str, Any]],
                  pods: list[dict[str, Any]], pod: dict[str, Any], names: list[str]) -> str:
    """The node the extender's prioritize holds for ``pod`` when kube-scheduler lists
    ``names`` in that order."""
    service = ExtenderService.from_cluster_objects(platform, ClusterObjects(nodes, pods))
    service.start()
    service.scheduler.filter(pod, names)  # prioritize holds only what this filter passed
    outcome = service.scheduler.prioritize(pod, names)
    assert outcome.scores is not None
    holding = service.inventory.holding(pod["metadata"]["uid"])
    assert holding is not None
    return holding.node


def shadow_would(platform: Platform, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                 pod: dict[str, Any], bound_to: str) -> ShadowRecord:
    records: list[ShadowRecord] = []
    service = ShadowService(platform, object())  # type: ignore[arg-type]  # no watch started
    service.applier._on_record = records.append
    service.applier.replace_nodes(nodes)
    service.applier.replace_pods(pods)
    service.inventory.mark_synced()
    service.applier.pod_event("ADDED", pod)
    service.applier.pod_event("MODIFIED", {**pod, "spec": {**pod["spec"], "nodeName": bound_to}})
    (record,) = records
    return record


@pytest.mark.parametrize("names", [["t4-a", "t4-b", "t4-c"], ["t4-c", "t4-b", "t4-a"],
                                   ["t4-b", "t4-c", "t4-a"]])
def test_equal_scores_go_to_the_same_node_whatever_the_order(platform: Platform,
                                                             names: list[str]) -> None:
    """Three empty identical nodes: most-allocated scores them equally (1/2 GPU = 50)."""
    tied = with_strategy(platform, "most-allocated")
    nodes = [t4_node(n, 2) for n in ("t4-c", "t4-a", "t4-b")]  # learned in yet another order
    pod = make_pod("p").uid("p").gpus(1).obj()
    held = extender_hold(tied, nodes, [], pod, names)
    assert held == "t4-a"                       # the name that sorts first
    assert shadow_would(tied, nodes, [], pod, bound_to="t4-c").would.node == held


def test_near_ties_that_round_to_one_priority_follow_the_raw_score(platform: Platform) -> None:
    """most-allocated after the pod: a-node (4 + 1) / 7 = 71.4, b-node (13 + 1) / 19 = 73.7:
    both priority 7 on the wire, where a reading of the wire picks a-node by name; the
    extender holds the higher raw score, b-node, and so does the shadow."""
    tied = with_strategy(platform, "most-allocated")
    nodes = [t4_node("a-node", 7), t4_node("b-node", 19)]
    pods = [busy("used-a", "a-node", 4), busy("used-b", "b-node", 13)]
    pod = make_pod("p").uid("p").gpus(1).obj()
    held = extender_hold(tied, nodes, pods, pod, ["a-node", "b-node"])
    assert held == "b-node"
    record = shadow_would(tied, nodes, pods, pod, bound_to="a-node")
    assert record.would.node == "b-node"
    assert record.would.score == 74             # 73.7, the strategy's own score
    assert not record.agrees
