"""One table per kube-scheduler filter plugin, each citing the source it follows
(``pkg/scheduler/framework/plugins/...``, kube-scheduler 1.36): the rows are the cases of
that plugin's own ``*_test.go`` that concern Node and Pod fields."""

from __future__ import annotations

from typing import Any

import pytest

from extender.kube.filters.facts import node_facts, pod_demand
from extender.kube.filters.rules import (
    NodeUse,
    Rule,
    first_exclusion,
    node_affinity,
    node_name,
    node_ports,
    node_unschedulable,
    resources_fit,
    taint_toleration,
)

JSON = dict[str, Any]
NO_USE = NodeUse({}, 0, ())


def node(name: str = "n1", *, labels: JSON | None = None, taints: list[JSON] | None = None,
         unschedulable: bool = False, ready: str | None = None,
         allocatable: JSON | None = None) -> JSON:
    status: JSON = {"allocatable": allocatable or {"cpu": "8", "memory": "32Gi", "pods": "110"}}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    spec: JSON = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": status}


def pod(*, tolerations: list[JSON] | None = None, selector: JSON | None = None,
        affinity: list[JSON] | None = None, node: str = "", containers: list[JSON] | None = None,
        **spec: Any) -> JSON:
    body: JSON = {"containers": containers or [{"name": "c"}], **spec}
    if tolerations:
        body["tolerations"] = tolerations
    if selector:
        body["nodeSelector"] = selector
    if affinity is not None:
        body["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                             {"nodeSelectorTerms": affinity}}}
    if node:
        body["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": body}


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> JSON:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> JSON:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


# nodeunschedulable/node_unschedulable_test.go TestNodeUnschedulable
@pytest.mark.parametrize(("unschedulable", "tolerations", "excluded"), [
    (False, [], False),                                               # schedulable node
    (True, [], True),                                                 # cordoned
    (True, [tol("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")], False),
    (True, [tol("node.kubernetes.io/unschedulable", "Exists", effect="NoExecute")], True),
    (True, [tol(operator="Exists")], False),                          # tolerates everything
])
def test_node_unschedulable(unschedulable: bool, tolerations: list[JSON],
                            excluded: bool) -> None:
    out = node_unschedulable(pod_demand(pod(tolerations=tolerations)),
                             node_facts(node(unschedulable=unschedulable)))
    assert (out is not None) == excluded
    assert out is None or out.rule is Rule.UNSCHEDULABLE


# nodename/node_name_test.go TestNodeName
@pytest.mark.parametrize(("wanted", "excluded"), [("", False), ("n1", False), ("n2", True)])
def test_node_name(wanted: str, excluded: bool) -> None:
    out = node_name(pod_demand(pod(node=wanted)), node_facts(node("n1")))
    assert (out is not None) == excluded


# tainttoleration/taint_toleration_test.go TestTaintTolerationFilter, and
# k8s.io/api/core/v1/toleration_test.go TestTolerationToleratesTaint
GPU = taint("nvidia.com/gpu", "present")
@pytest.mark.parametrize(("taints", "tolerations", "subject"), [
    ([], [], None),                                                    # no taint
    ([GPU], [], "nvidia.com/gpu=present:NoSchedule"),                  # untolerated
    ([GPU], [tol("nvidia.com/gpu", "Equal", "present", "NoSchedule")], None),
    ([GPU], [tol("nvidia.com/gpu", "Equal", "absent", "NoSchedule")],  # value differs
     "nvidia.com/gpu=present:NoSchedule"),
    ([GPU], [tol("nvidia.com/gpu", "Exists")], None),                  # Exists, any effect
    ([GPU], [tol("nvidia.com/gpu", "Exists", effect="NoExecute")],     # effect differs
     "nvidia.com/gpu=present:NoSchedule"),
    ([GPU], [tol(operator="Exists")], None),                           # empty key + Exists
    ([taint("dedicated", "ml", "PreferNoSchedule")], [], None),        # only scores
    ([taint("dedicated", "ml", "NoExecute")], [], "dedicated=ml:NoExecute"),
    ([taint("a", "1"), taint("b", "2")], [tol("a", "Equal", "1")], "b=2:NoSchedule"),
])
def test_taint_toleration(taints: list[JSON], tolerations: list[JSON],
                          subject: str | None) -> None:
    out = taint_toleration(pod_demand(pod(tolerations=tolerations)),
                           node_facts(node(taints=taints)))
    assert (out.subject if out is not None else None) == subject
    assert out is None or out.rule is Rule.TAINT


# the Ready condition: kube-scheduler reads only the taints the node lifecycle controller
# adds (pkg/controller/nodelifecycle taintNodeByCondition: False -> not-ready, Unknown ->
# unreachable, NoSchedule), so a condition without its taint yet is read as that taint
@pytest.mark.parametrize(("ready", "taints", "tolerations", "excluded"), [
    (None, [], [], False),                                             # no condition: ready
    ("True", [], [], False),
    ("False", [], [], True),
    ("Unknown", [], [], True),
    ("False", [taint("node.kubernetes.io/not-ready")], [], True),      # taint already there
    ("False", [], [tol("node.kubernetes.io/not-ready", "Exists", effect="NoExecute")], True),
    ("False", [], [tol("node.kubernetes.io/not-ready", "Exists")], False),
])
def test_not_ready(ready: str | None, taints: list[JSON], tolerations: list[JSON],
                   excluded: bool) -> None:
    facts = node_facts(node(ready=ready, taints=taints))
    assert facts.ready == (ready in (None, "True"))
    assert len([t for t in facts.taints if t.key.startswith("node.kubernetes.io/")]) == \
        (0 if ready in (None, "True") else 1)                          # never doubled
    out = taint_toleration(pod_demand(pod(tolerations=tolerations)), facts)
    assert (out is not None) == excluded
    assert out is None or out.rule is Rule.NOT_READY


def expr(key: str, op: str, *values: str) -> JSON:
    return {"key": key, "operator": op, "values": list(values)}


# nodeaffinity/node_affinity_test.go TestNodeAffinity
LABELS = {"pool": "a100", "zone": "z1", "gpus": "8"}
@pytest.mark.parametrize(("selector", "terms", "matched"), [
    (None, None, True),
    ({"pool": "a100"}, None, True),
    ({"pool": "t4"}, None, False),
    ({"pool": "a100", "zone": "z2"}, None, False),                      # every pair
    (None, [{"matchExpressions": [expr("pool", "In", "a100", "h100")]}], True),
    (None, [{"matchExpressions": [expr("pool", "NotIn", "a100")]}], False),
    (None, [{"matchExpressions": [expr("missing", "NotIn", "x")]}], True),  # absent: not in
    (None, [{"matchExpressions": [expr("pool", "Exists")]}], True),
    (None, [{"matchExpressions": [expr("pool", "DoesNotExist")]}], False),
    (None, [{"matchExpressions": [expr("gpus", "Gt", "4")]}], True),
    (None, [{"matchExpressions": [expr("gpus", "Lt", "4")]}], False),
    (None, [{"matchExpressions": [expr("zone", "Gt", "4")]}], False),   # not an integer
    (None, [{"matchExpressions": [expr("pool", "In", "t4")]},           # terms are ORed
            {"matchExpressions": [expr("zone", "In", "z1")]}], True),
    (None, [{"matchExpressions": [expr("pool", "In", "a100"),           # expressions ANDed
                                  expr("zone", "In", "z2")]}], False),
    (None, [{}], False),                                                # empty term: nothing
    (None, [], False),                                                  # no term: nothing
    (None, [{"matchFields": [expr("metadata.name", "In", "n1")]}], True),
    (None, [{"matchFields": [expr("metadata.name", "NotIn", "n1")]}], False),
    ({"pool": "t4"}, [{"matchExpressions": [expr("pool", "Exists")]}], False),  # both apply
])
def test_node_affinity(selector: JSON | None, terms: list[JSON] | None, matched: bool) -> None:
    out = node_affinity(pod_demand(pod(selector=selector, affinity=terms)),
                        node_facts(node("n1", labels=LABELS)))
    assert (out is None) == matched


def port(number: int, protocol: str = "TCP", ip: str = "") -> JSON:
    out: JSON = {"containerPort": number, "hostPort": number, "protocol": protocol}
    if ip:
        out["hostIP"] = ip
    return out


# nodeports/node_ports_test.go TestNodePorts
@pytest.mark.parametrize(("wanted", "used", "excluded"), [
    ([], [port(8080)], False),
    ([port(8080)], [], False),
    ([port(8080)], [port(8080)], True),
    ([port(8080, "UDP")], [port(8080)], False),                         # other protocol
    ([port(8080, ip="10.0.0.1")], [port(8080, ip="10.0.0.2")], False),  # other IPs
    ([port(8080, ip="10.0.0.1")], [port(8080)], True),                  # wildcard used
    ([port(8080)], [port(8080, ip="10.0.0.2")], True),                  # wildcard wanted
])
def test_node_ports(wanted: list[JSON], used: list[JSON], excluded: bool) -> None:
    demand = pod_demand(pod(containers=[{"name": "c", "ports": wanted}]))
    use = NodeUse({}, 1, pod_demand(pod(containers=[{"name": "c", "ports": used}])).host_ports)
    assert (node_ports(demand, use) is not None) == excluded


# noderesources/fit_test.go TestEnoughRequests: allocatable cpu 8 (8000m), memory 32Gi,
# pods 110, nvidia.com/gpu 4; "used" is what the node's pods request already
GI = 2**30
ALLOC = {"cpu": "8", "memory": "32Gi", "pods": "3", "nvidia.com/gpu": "4",
         "ephemeral-storage": "10Gi"}
@pytest.mark.parametrize(("requests", "used", "pods", "subject"), [
    ({}, {}, 0, None),
    ({"cpu": "8"}, {}, 0, None),                                        # 8000 <= 8000 - 0
    ({"cpu": "8001m"}, {}, 0, "cpu"),
    ({"cpu": "2"}, {"cpu": 6000}, 1, None),                             # 2000 <= 8000 - 6000
    ({"cpu": "2"}, {"cpu": 6001}, 1, "cpu"),                            # 2000 > 1999
    ({"memory": "16Gi"}, {"memory": 16 * GI}, 1, None),                 # exactly what is left
    ({"memory": "17Gi"}, {"memory": 16 * GI}, 1, "memory"),
    ({"cpu": "500", "memory": "64Gi"}, {}, 0, "cpu, memory"),           # both reported
    ({}, {}, 3, "pods"),                                                # 3 + 1 > 3
    ({"nvidia.com/gpu": "4"}, {"nvidia.com/gpu": 1}, 1, "nvidia.com/gpu"),
    ({"example.com/fpga": "1"}, {}, 0, "example.com/fpga"),             # node lacks it: 0
    ({"gpu-extender.io/gpu-memory": "10Gi"}, {}, 0, None),              # ignoredByScheduler
    ({"ephemeral-storage": "11Gi"}, {}, 0, "ephemeral-storage"),
])
def test_resources_fit(requests: JSON, used: dict[str, int], pods: int,
                       subject: str | None) -> None:
    demand = pod_demand(pod(containers=[{"name": "c", "resources": {"requests": requests}}]))
    out = resources_fit(demand, node_facts(node(allocatable=ALLOC)), NodeUse(used, pods, ()),
                        frozenset({"gpu-extender.io/gpu-memory"}))
    assert (out.subject if out is not None else None) == subject
    assert out is None or out.rule is Rule.RESOURCES


def test_first_exclusion_follows_the_profile_order() -> None:
    """``default_plugins.go``: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
    NodePorts, NodeResourcesFit; the first that rejects gives the reason."""
    facts = node_facts(node(unschedulable=True, taints=[GPU], labels={"pool": "t4"},
                            allocatable={"cpu": "1", "pods": "110"}))
    demand = pod_demand(pod(selector={"pool": "a100"},
                            containers=[{"name": "c", "resources": {"requests": {"cpu": "2"}}}]))
    rules = []
    for _ in range(4):
        out = first_exclusion(demand, facts, NO_USE, frozenset())
        assert out is not None
        rules.append(out.rule)
        if out.rule is Rule.UNSCHEDULABLE:
            facts = node_facts(node(taints=[GPU], labels={"pool": "t4"},
                                    allocatable={"cpu": "1", "pods": "110"}))
        elif out.rule is Rule.TAINT:
            facts = node_facts(node(labels={"pool": "t4"}, allocatable={"cpu": "1",
                                                                          "pods": "110"}))
        elif out.rule is Rule.NODE_AFFINITY:
            facts = node_facts(node(labels={"pool": "a100"}, allocatable={"cpu": "1",
                                                                            "pods": "110"}))
    assert rules == [Rule.UNSCHEDULABLE, Rule.TAINT, Rule.NODE_AFFINITY, Rule.RESOURCES]


def test_core_resources_absent_from_a_hand_written_dump_are_not_checked() -> None:
    """The API server always reports cpu, memory, ephemeral-storage and pods; a dump written
    by hand often leaves them out: not checked, where an absent extended resource is 0."""
    facts = node_facts({"metadata": {"name": "n"}, "status": {"allocatable": {}}})
    demand = pod_demand(pod(containers=[{"name": "c", "resources": {"requests": {
        "cpu": "64", "memory": "1Ti", "ephemeral-storage": "1Ti"}}}]))
    assert resources_fit(demand, facts, NodeUse({}, 500, ()), frozenset()) is None
    gpu = pod_demand(pod(containers=[{"name": "c", "resources": {"limits": {
        "nvidia.com/gpu": "1"}}}]))
    out = resources_fit(gpu, facts, NO_USE, frozenset())
    assert out is not None and out.subject == "nvidia.com/gpu"
