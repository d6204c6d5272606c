"""Issue 19, findings 1 and 5: the verbs never move or erase what a bound pod holds.

kube-scheduler forgets a pod whose bind answer it lost (after the Binding went through) and
schedules it again with its cached, still unbound copy. Before, that retry's filter counted the
pod's own GPUs against it, prioritize assumed it on another node (replacing the ``OBSERVED``
holding) and the failing bind's ``forget`` dropped it: the next pod got the same GPUs.
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.inventory.store import HoldingState
from extender.platform import Platform
from extender.scheduling.holds import MAX_TENTATIVE_PER_NODE
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from tests.builders import make_pod
from tests.server.conftest import online_service
from tests.server.invariants import assert_gpu_invariants
from tests.sync.clusters import t4_node, whole_pod
from tests.sync.fake_api import FakeApiServer

NAMES = ["t4-0", "t4-1"]


def args(pod: dict[str, Any], names: list[str] = NAMES) -> ExtenderArgs:
    return ExtenderArgs(Pod=pod, Nodes=None, NodeNames=names)


def bind(service: ExtenderService, name: str, node: str) -> str:
    answer = service.verbs.bind(ExtenderBindingArgs(
        PodName=name, PodNamespace="ml", PodUID=f"uid-{name}", Node=node)).document()
    return str(answer["Error"])


def cycle(service: ExtenderService, pod: dict[str, Any]) -> tuple[list[str], dict[str, int]]:
    """One scheduling cycle's filter and prioritize, as kube-scheduler sends them."""
    feasible = service.verbs.filter(args(pod)).document()["NodeNames"] or []
    scores = {p["Host"]: int(p["Score"])
              for p in service.verbs.prioritize(args(pod, feasible)).document()}
    return feasible, scores


@pytest.fixture
def api() -> FakeApiServer:
    # two 4-T4 nodes; each pod takes a whole node's 4 GPUs
    return FakeApiServer([t4_node("t4-0"), t4_node("t4-1")],
                         [whole_pod("a", 4, "t4"), whole_pod("b", 4, "t4")])


@pytest.mark.parametrize("watch_seen", [False, True], ids=["bound", "observed"])
def test_a_retried_cycle_of_a_bound_pod_is_answered_from_its_binding(
        platform: Platform, api: FakeApiServer, watch_seen: bool) -> None:
    service = online_service(platform, api)
    unbound_a = api.get_pod("ml", "a")  # kube-scheduler's cached copy
    feasible, _ = cycle(service, unbound_a)
    assert feasible == NAMES
    held = service.inventory.holding("uid-a")
    assert held is not None
    node, other = held.node, next(n for n in NAMES if n != held.node)
    assert bind(service, "a", node) == ""
    if watch_seen:
        service.applier.pod_event("MODIFIED", api.get_pod("ml", "a"))
    state = HoldingState.OBSERVED if watch_seen else HoldingState.BOUND
    before = service.inventory.holding("uid-a")
    assert before is not None and before.state is state

    # the bind answer was lost: the same pod, the same (unbound) object, a new cycle
    filtered = service.verbs.filter(args(unbound_a)).document()
    assert filtered["NodeNames"] == [node], "its own GPUs never count against it"
    assert "already bound" in filtered["FailedAndUnresolvableNodes"][other]
    scores = {p["Host"]: int(p["Score"])
              for p in service.verbs.prioritize(args(unbound_a)).document()}
    assert scores[node] > scores.get(other, 0) == 0
    assert service.inventory.holding("uid-a") == before, "prioritize replaced nothing"
    assert "already bound" in bind(service, "a", other)
    assert service.inventory.holding("uid-a") == before, "a refused bind forgot nothing"
    assert bind(service, "a", node) == "", "already bound to the node we hold: success"
    assert service.inventory.holding("uid-a") == before

    # the next pod cannot get the same GPUs
    feasible, _ = cycle(service, api.get_pod("ml", "b"))
    assert feasible == [other]
    assert bind(service, "b", other) == ""
    service.applier.pod_event("MODIFIED", api.get_pod("ml", "a"))
    service.applier.pod_event("MODIFIED", api.get_pod("ml", "b"))
    assert_gpu_invariants(list(api.pods.values()), service.inventory)


def test_prioritize_alone_holds_nothing(platform: Platform, api: FakeApiServer) -> None:
    """Finding 5: a client reaching the verb port sends invented pods to /prioritize."""
    service = online_service(platform, api)
    for i in range(6):
        invented = make_pod(f"x{i}").namespace("evil").uid(f"uid-x{i}").gpus(4) \
            .accelerator("t4").obj()
        service.verbs.prioritize(args(invented))
        assert service.inventory.holding(f"uid-x{i}") is None
    feasible, _ = cycle(service, api.get_pod("ml", "a"))
    assert feasible == NAMES


def test_prioritize_with_a_bound_pods_uid_replaces_nothing(
        platform: Platform, api: FakeApiServer) -> None:
    service = online_service(platform, api)
    cycle(service, api.get_pod("ml", "a"))
    held = service.inventory.holding("uid-a")
    assert held is not None
    assert bind(service, "a", held.node) == ""
    before = service.inventory.holding("uid-a")
    # another request, with a's UID, for one GPU, filtered and prioritized on both nodes
    impostor = make_pod("imp").namespace("evil").uid("uid-a").gpus(1).accelerator("t4").obj()
    cycle(service, impostor)
    assert service.inventory.holding("uid-a") == before


def test_tentative_holds_are_bounded_per_node(platform: Platform) -> None:
    # one 4-T4 node, 1-GPU invented pods that each pass filter: at most the budget is held
    api = FakeApiServer([t4_node("t4-0")])
    service = online_service(platform, api)
    held = 0
    for i in range(4):
        pod = make_pod(f"x{i}").namespace(f"ns{i}").uid(f"uid-x{i}").gpus(1) \
            .accelerator("t4").obj()
        feasible = service.verbs.filter(args(pod, ["t4-0"])).document()["NodeNames"]
        assert feasible == ["t4-0"]
        service.verbs.prioritize(args(pod, ["t4-0"]))
        held += service.inventory.holding(f"uid-x{i}") is not None
    # 2 holds (MAX_TENTATIVE_PER_NODE), the other 2 pods scored but unheld: bind would choose
    assert held == MAX_TENTATIVE_PER_NODE
