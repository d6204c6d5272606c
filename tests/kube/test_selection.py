"""Required node selection: the vectorized label index agrees with the per-node reference
evaluation, and an untyped pod is typed by it only when every GPU node it reaches is of a
protected type."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from extender.kube.selection import (
    LabelIndex,
    NodeSelection,
    SelectionTyping,
    matches,
    pinned_values,
    selection_of,
)
from extender.model import GpuDevice, NodeInfo
from extender.platform import Platform


def gpu_node(platform: Platform, name: str, type_id: str,
             labels: dict[str, str]) -> NodeInfo:
    index = platform.catalog.index_of(type_id)
    return NodeInfo(name, (GpuDevice(0, index, 1024),), labels=labels)


def spec(selector: dict[str, str] | None = None,
         terms: list[list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if selector:
        out["nodeSelector"] = selector
    if terms is not None:
        out["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}}
    return out


KEYS = ("pool", "zone", "size")
VALUES = ("a", "b", "c", "1", "5")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def random_selection(rng: random.Random) -> NodeSelection:
    selector = {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, 1))}
    terms = None
    if rng.random() < 0.8:
        terms = []
        for _ in range(rng.randint(0, 3)):
            term = []
            for _ in range(rng.randint(0, 2)):
                op = rng.choice(OPERATORS)
                values = [rng.choice(VALUES)] if op in ("Gt", "Lt") else \
                    rng.sample(VALUES, rng.randint(1, 2)) if op in ("In", "NotIn") else []
                term.append({"key": rng.choice(KEYS), "operator": op, "values": values})
            term_exprs = term
            terms.append(term_exprs)
    return selection_of(spec(selector, terms))


def test_the_label_index_agrees_with_the_reference_on_random_selections(
        platform: Platform) -> None:
    rng = random.Random(7)
    nodes = {}
    for i in range(40):
        labels = {k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.7}
        nodes[f"n{i}"] = gpu_node(platform, f"n{i}", "t4", labels)
    index = LabelIndex(nodes, platform.catalog)
    for _ in range(500):
        selection = random_selection(rng)
        fast = index.select(selection).tolist()
        slow = [matches(selection, name, info.labels) for name, info in nodes.items()]
        assert fast == slow, selection


@pytest.fixture
def fleet(platform: Platform) -> dict[str, NodeInfo]:
    return {
        "mig": gpu_node(platform, "mig", "a100-40gb", {
            "cloud.google.com/gke-nodepool": "a100-pool",
            "cloud.google.com/gke-gpu-partition-size": "1g.5gb"}),
        "a100": gpu_node(platform, "a100", "a100-80gb", {
            "cloud.google.com/gke-nodepool": "a100-pool",
            "node.kubernetes.io/instance-type": "a2-ultragpu-1g"}),
        "t4": gpu_node(platform, "t4", "t4", {"cloud.google.com/gke-nodepool": "t4-pool"}),
        "cpu": NodeInfo("cpu", (), labels={"cloud.google.com/gke-nodepool": "cpu-pool"}),
    }


@pytest.mark.parametrize(("pod_spec", "expected"), [
    (spec({"cloud.google.com/gke-nodepool": "a100-pool"}), {"a100-40gb", "a100-80gb"}),
    (spec({"node.kubernetes.io/instance-type": "a2-ultragpu-1g"}), {"a100-80gb"}),
    (spec(terms=[[{"key": "cloud.google.com/gke-gpu-partition-size",
                   "operator": "Exists"}]]), {"a100-40gb"}),
    # admits the T4 pool too: stays untyped, protection keeps it off the A100s
    (spec(terms=[[{"key": "cloud.google.com/gke-nodepool", "operator": "In",
                   "values": ["a100-pool", "t4-pool"]}]]), None),
    (spec({"cloud.google.com/gke-nodepool": "t4-pool"}), None),  # unprotected: nothing to open
    (spec({"cloud.google.com/gke-nodepool": "cpu-pool"}), None),  # reaches no GPU node
    (spec({"cloud.google.com/gke-nodepool": "nowhere"}), None),
])
def test_selection_types_a_pod_only_when_it_reaches_protected_types_only(
        platform: Platform, fleet: dict[str, NodeInfo], pod_spec: dict[str, Any],
        expected: set[str] | None) -> None:
    typing = SelectionTyping(platform.catalog, platform.protection.protected)
    result = typing.types_of(selection_of(pod_spec), fleet)
    if expected is None:
        assert result is None
    else:
        assert result is not None
        assert {platform.catalog.id_of(t) for t in result.types} == expected
        assert "admits only" in result.rule  # the explanation says which rule typed it


def test_the_answer_follows_a_new_node_map(platform: Platform,
                                           fleet: dict[str, NodeInfo]) -> None:
    typing = SelectionTyping(platform.catalog, platform.protection.protected)
    selection = selection_of(spec({"cloud.google.com/gke-nodepool": "a100-pool"}))
    assert typing.types_of(selection, fleet) is not None
    grown = {**fleet, "t4b": gpu_node(platform, "t4b", "t4",
                                      {"cloud.google.com/gke-nodepool": "a100-pool"})}
    assert typing.types_of(selection, grown) is None  # an unprotected node joined the pool


def test_placement_request_uses_the_inventory_nodes(platform: Platform,
                                                    fleet: dict[str, NodeInfo]) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ml"},
           "spec": {"nodeSelector": {"cloud.google.com/gke-nodepool": "a100-pool"},
                    "containers": [{"name": "c",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    req = platform.pods.request(pod)
    assert req is not None and req.types is None
    untyped = platform.placement_request(req, namespace="ml")
    typed = platform.placement_request(req, namespace="ml", nodes=fleet)
    a100 = platform.catalog.index_of("a100-80gb")
    assert not untyped.allowed[a100]  # protected from an untyped pod
    assert typed.allowed[a100]
    assert "admits only" in typed.request.type_source


def test_pinned_values_read_selector_and_every_term() -> None:
    key = "cloud.google.com/gke-gpu-partition-size"
    assert pinned_values(selection_of(spec({key: "1g.5gb"})), key) == {"1g.5gb"}
    both = selection_of(spec(terms=[[{"key": key, "operator": "In", "values": ["1g.5gb"]}],
                                    [{"key": key, "operator": "In", "values": ["2g.10gb"]}]]))
    assert pinned_values(both, key) == {"1g.5gb", "2g.10gb"}
    loose = selection_of(spec(terms=[[{"key": key, "operator": "In", "values": ["1g.5gb"]}],
                                     [{"key": "x", "operator": "Exists"}]]))
    assert pinned_values(loose, key) is None  # the second term admits any partition


def test_equal_selections_are_one_cache_entry() -> None:
    a = selection_of(spec({"b": "2", "a": "1"}, [[{"key": "k", "operator": "In",
                                                    "values": ["y", "x"]}]]))
    b = selection_of(spec({"a": "1", "b": "2"}, [[{"key": "k", "operator": "In",
                                                    "values": ["x", "y"]}]]))
    assert a == b and hash(a) == hash(b)
    assert len({a, b, *itertools.repeat(a, 3)}) == 1


def test_a_pool_of_one_partition_makes_nvidia_gpu_one_instance(platform: Platform) -> None:
    """AKS MIG pool, single strategy (articles/aks/gpu-multi-instance.md): the pod writes
    nvidia.com/gpu: 1; selecting the pool by its agentpool label is asking for one instance."""
    info = platform.nodes.decode({
        "metadata": {"name": "aks-mig-0", "labels": {
            "node.kubernetes.io/instance-type": "Standard_ND96asr_v4",
            "kubernetes.azure.com/agentpool": "mignode"}},
        "status": {"allocatable": {"nvidia.com/gpu": "56"}}})
    pod = {"metadata": {"name": "nvidia-single", "namespace": "default"},
           "spec": {"nodeSelector": {"kubernetes.azure.com/agentpool": "mignode"},
                    "containers": [{"name": "c",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    req = platform.pods.request(pod)
    assert req is not None
    placement = platform.placement_request(req, nodes={info.name: info})
    assert placement.request.kind.value == "mig"
    assert placement.request.mig_profile == "1g.5gb"
    assert placement.mig_index == platform.catalog.mig.index["1g.5gb"]
    assert "partitioned 1g.5gb" in placement.request.type_source
