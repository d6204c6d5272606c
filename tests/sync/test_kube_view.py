"""``KubeViewApplier``: every event and relist reaches both books, the inventory (GPUs held)
and kube-scheduler's view (``KubeNodes``: nodes known, GPUs requested per node)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from extender.inventory.store import Inventory
from extender.platform import Platform
from extender.sync.kube_view import KubeViewApplier
from tests.sync.clusters import l4_node
from tests.sync.test_apply import bound_pod, free_gpus

P = pytest.param
GPU = "nvidia.com/gpu"
Step = Callable[[KubeViewApplier], object]


def add(node: str, count: int, name: str = "p") -> Step:
    return lambda a: a.pod_event("ADDED", bound_pod(node, count, name=name))


def delete(node: str, count: int, name: str = "p") -> Step:
    return lambda a: a.pod_event("DELETED", bound_pod(node, count, name=name))


def relist(*pods: dict[str, Any]) -> Step:
    return lambda a: a.replace_pods(iter(pods))  # an iterator: read once by both books


@pytest.mark.parametrize(("steps", "nodes", "requested", "free"), [
    # n1, n2: 4 L4 each, no pod yet
    P([], ["n1", "n2"], {"n1": 0, "n2": 0}, {"n1": 4, "n2": 4}, id="listed"),
    # a 3-GPU pod bound to n1: 3 requested there, 4 - 3 = 1 free
    P([add("n1", 3)], ["n1", "n2"], {"n1": 3, "n2": 0}, {"n1": 1, "n2": 4}, id="pod added"),
    # the same pod deleted: back to 0 requested, 4 free
    P([add("n1", 3), delete("n1", 3)], ["n1", "n2"], {"n1": 0, "n2": 0},
      {"n1": 4, "n2": 4}, id="pod deleted"),
    # a relist with one 2-GPU pod on n2 replaces the 3-GPU pod on n1 in both books
    P([add("n1", 3), relist(bound_pod("n2", 2, name="q"))], ["n1", "n2"],
      {"n1": 0, "n2": 2}, {"n1": 4, "n2": 2}, id="pods relisted"),
    # n2 deleted: neither book knows it
    P([lambda a: a.node_event("DELETED", l4_node("n2"))], ["n1"], {"n1": 0}, {"n1": 4},
      id="node deleted"),
    # a node relist (an iterator) of n1 alone
    P([lambda a: a.replace_nodes(iter([l4_node("n1")]))], ["n1"], {"n1": 0}, {"n1": 4},
      id="nodes relisted"),
])
def test_both_books_see_every_event(platform: Platform, steps: list[Step], nodes: list[str],
                                    requested: dict[str, int], free: dict[str, int]) -> None:
    inventory = Inventory(platform.catalog)
    applier = KubeViewApplier(platform, inventory, ignored=())
    applier.replace_nodes([l4_node("n1"), l4_node("n2")])
    for step in steps:
        step(applier)
    assert applier.kube.names() == nodes
    assert inventory.node_names() == nodes
    assert {n: applier.kube.use(n).requested.get(GPU, 0) for n in nodes} == requested
    assert {n: len(free_gpus(inventory, n)) for n in nodes} == free
