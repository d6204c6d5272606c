"""``KubeNodes``: what the pods on a node request (kube-scheduler's cache counts bound,
non-terminal pods), the filter over every node, and the reasons grouped."""

from __future__ import annotations

from typing import Any

from extender.kube.filters.nodes import KubeNodes
from extender.kube.filters.reasons import describe, group_exclusions

JSON = dict[str, Any]


def node(name: str, cpu: str = "8", **spec: Any) -> JSON:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"pool": name[:1]}},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "pods": "110"}}}


def pod(name: str, cpu: str, node: str = "", phase: str = "Running") -> JSON:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}}


def test_bound_non_terminal_pods_count_on_their_node() -> None:
    state = KubeNodes.of([node("a1"), node("a2")],
                         [pod("p1", "3", "a1"), pod("p2", "2", "a1"),
                          pod("done", "8", "a2", phase="Succeeded"), pod("pending", "8")])
    assert state.use("a1").requested == {"cpu": 5000}     # 3 + 2 cores
    assert state.use("a1").pods == 2
    assert state.use("a2").pods == 0                      # the Succeeded pod is gone
    verdict = state.filter(pod("new", "4"))
    assert verdict.feasible == ["a2"]                     # a1: 4 > 8 - 5 free
    assert verdict.excluded["a1"].subject == "cpu"


def test_the_judged_pod_is_not_counted_twice() -> None:
    """A bound pod judged again (explain, the shadow) does not compete with itself."""
    state = KubeNodes.of([node("a1")], [pod("p1", "6", "a1")])
    assert state.filter(pod("p1", "6", "a1")).feasible == ["a1"]
    assert state.filter(pod("p2", "6")).feasible == []


def test_bound_and_deleted_update_the_sums() -> None:
    state = KubeNodes.of([node("a1")], [])
    state.bound(pod("p1", "6"), "a1")
    assert state.filter(pod("p2", "6")).feasible == []
    state.pod_event(True, pod("p1", "6", "a1"))
    assert state.filter(pod("p2", "6")).feasible == ["a1"]


def test_reasons_are_grouped_most_nodes_first() -> None:
    state = KubeNodes.of(
        [node("a1", cpu="2"), node("a2", cpu="2"), node("b1"), node("b2"), node("b3"),
         node("c1", unschedulable=True),
         node("d1", taints=[{"key": "nvidia.com/gpu", "value": "present",
                             "effect": "NoSchedule"}])], [])
    wanted = pod("p", "4")
    wanted["spec"]["nodeSelector"] = {"pool": "a"}
    groups = group_exclusions(state.filter(wanted).excluded)
    assert describe(groups) == (
        "3 nodes: node affinity/selector (spec.nodeSelector[pool]=a); "
        "2 nodes: insufficient cpu (e.g. a1: cpu: needs 4 cores, 2 cores free); "
        "1 node: taint nvidia.com/gpu=present:NoSchedule; "
        "1 node: unschedulable (cordoned)")


def test_objects_no_api_server_holds_are_left_out_as_the_inventory_leaves_them() -> None:
    # a hand-edited cluster file: a node whose conditions are a number, a pod whose
    # tolerations are; the filters iterate both (a TypeError before)
    broken_node = node("b1") | {"status": {"conditions": 5}}
    broken_pod = pod("p1", "6", "a1")
    broken_pod["spec"]["tolerations"] = 3
    state = KubeNodes.of([node("a1"), broken_node], [broken_pod])
    assert state.names() == ["a1"]
    assert state.use("a1").pods == 0
    state.pod_event(False, pod("p1", "6", "a1"))  # mended: it counts
    assert state.use("a1").pods == 1
    state.pod_event(False, broken_pod)  # broken again: it no longer counts
    assert state.use("a1").pods == 0
    state.node_event(False, node("a1") | {"status": {"conditions": "Ready"}})
    assert state.names() == []
