"""In-flight accounting: prioritize holds GPUs for the bind that follows; binds re-check."""

from __future__ import annotations

from typing import Any

import pytest

from extender.inventory.store import HoldingState
from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from tests.clock import FakeClock
from tests.server.conftest import online_service
from tests.sync.clusters import l4_node, whole_pod
from tests.sync.fake_api import FakeApiServer

NAMES = ["n1", "n2"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api() -> FakeApiServer:
    pods = [whole_pod(name) for name in ("a", "b", "c", "d")]
    return FakeApiServer([l4_node("n1", gpus=1), l4_node("n2", gpus=1)], pods)


@pytest.fixture
def service(platform: Platform, api: FakeApiServer, clock: FakeClock) -> ExtenderService:
    return online_service(platform, api, clock=clock)


def args(api: FakeApiServer, name: str) -> ExtenderArgs:
    return ExtenderArgs(Pod=api.get_pod("ml", name), Nodes=None, NodeNames=list(NAMES))


def bind_args(name: str, node: str) -> ExtenderBindingArgs:
    return ExtenderBindingArgs(PodName=name, PodNamespace="ml", PodUID=f"uid-{name}",
                               Node=node)


def schedule(service: ExtenderService, api: FakeApiServer, name: str) -> tuple[list[str], str]:
    """Filter + prioritize as kube-scheduler does; returns (feasible, top node)."""
    feasible = service.verbs.filter(args(api, name)).document()["NodeNames"] or []
    scores = service.verbs.prioritize(args(api, name)).document()
    top = max(scores, key=lambda s: s["Score"])["Host"] if feasible else ""
    return feasible, top


def holder(service: ExtenderService, name: str) -> Any:
    return service.inventory.holding(f"uid-{name}")


def test_the_next_pod_sees_the_previous_pods_reservation(service: ExtenderService,
                                                         api: FakeApiServer) -> None:
    feasible, top = schedule(service, api, "a")
    assert feasible == NAMES
    assert holder(service, "a").state is HoldingState.ASSUMED
    assert holder(service, "a").node == top
    result = service.verbs.filter(args(api, "b")).document()
    other = next(n for n in NAMES if n != top)
    assert result["NodeNames"] == [other]
    assert "in use" in result["FailedNodes"][top]  # full now: preemption could help


def test_bind_keeps_the_reserved_gpus_and_they_stay_taken(service: ExtenderService,
                                                          api: FakeApiServer) -> None:
    _, top = schedule(service, api, "a")
    reserved = holder(service, "a").assignment
    assert service.verbs.bind(bind_args("a", top)).document() == {"Error": ""}
    assert holder(service, "a").state is HoldingState.BOUND
    assert holder(service, "a").assignment == reserved
    bound = api.get_pod("ml", "a")
    assert bound["spec"]["nodeName"] == top
    assert bound["metadata"]["annotations"]["gpu-extender.io/visible-devices"] == "0"
    writes = [c[0] for c in api.calls if c[0] != "get"]
    assert writes[-1:] == ["bind"]  # one write: the Binding carries the annotations
    assert "patch" not in writes


def test_bind_to_another_node_than_reserved_moves_the_hold(service: ExtenderService,
                                                          api: FakeApiServer) -> None:
    _, top = schedule(service, api, "a")
    other = next(n for n in NAMES if n != top)
    assert service.verbs.bind(bind_args("a", other)).document() == {"Error": ""}
    assert holder(service, "a").node == other
    assert service.verbs.filter(args(api, "b")).document()["NodeNames"] == [top]


def test_reservations_expire_when_no_bind_comes(service: ExtenderService, api: FakeApiServer,
                                                clock: FakeClock) -> None:
    schedule(service, api, "a")
    clock.now += service.platform.config.service.reservation_ttl_seconds + 1
    assert service.verbs.filter(args(api, "b")).document()["NodeNames"] == NAMES
    assert holder(service, "a") is None
    assert b'gpu_extender_reservations_total{event="expired"} 1.0' in \
        service.metrics.exposition()


def test_rescheduling_a_pod_drops_its_own_stale_hold(service: ExtenderService,
                                                     api: FakeApiServer) -> None:
    schedule(service, api, "a")
    schedule(service, api, "b")  # both GPUs held now
    stale = holder(service, "a")
    result = service.verbs.filter(args(api, "a")).document()  # kube retries pod a
    service.verbs.warm_next()  # the worker's step after the answer
    assert len(result["NodeNames"] or []) == 1
    assert b'gpu_extender_reservations_total{event="superseded"} 1.0' in \
        service.metrics.exposition()
    # one node answered: kube-scheduler calls no prioritize, so filter holds it afresh
    fresh = holder(service, "a")
    assert fresh is not stale and fresh.node == result["NodeNames"][0]


def test_one_node_answered_is_held_by_filter(service: ExtenderService,
                                             api: FakeApiServer) -> None:
    _, top = schedule(service, api, "a")
    other = next(n for n in NAMES if n != top)
    # b fits only the other node: kube-scheduler will take it without a prioritize call,
    # so filter holds it once the answer is out, and the next pod sees both GPUs taken
    # before b's bind lands
    assert service.verbs.filter(args(api, "b")).document()["NodeNames"] == [other]
    assert holder(service, "b") is None
    service.verbs.warm_next()  # the worker's step after the answer
    assert holder(service, "b").state is HoldingState.ASSUMED
    assert holder(service, "b").node == other
    assert service.verbs.filter(args(api, "c")).document()["NodeNames"] in (None, [])
    reserved = holder(service, "b").assignment
    assert service.verbs.bind(bind_args("b", other)).document() == {"Error": ""}
    assert holder(service, "b").assignment == reserved


def test_a_retried_bind_succeeds_without_a_second_hold(service: ExtenderService,
                                                       api: FakeApiServer) -> None:
    _, top = schedule(service, api, "a")
    assert service.verbs.bind(bind_args("a", top)).document() == {"Error": ""}
    assert service.verbs.bind(bind_args("a", top)).document() == {"Error": ""}
    assert len([h for h in service.inventory.holdings() if h.key.name == "a"]) == 1
    other = next(n for n in NAMES if n != top)
    error = service.verbs.bind(bind_args("a", other)).document()["Error"]
    assert f"already bound to node {top}" in error


def test_a_bind_that_no_longer_fits_is_refused_and_counted(service: ExtenderService,
                                                           api: FakeApiServer) -> None:
    assert service.verbs.bind(bind_args("a", "n1")).document() == {"Error": ""}
    error = service.verbs.bind(bind_args("b", "n1")).document()["Error"]
    assert error.startswith("no longer fits on n1:")
    assert holder(service, "b") is None
    assert b"gpu_extender_bind_conflicts_total 1.0" in service.metrics.exposition()
    assert api.events[-1]["reason"] == "GpuBindRefused"
    assert "nodeName" not in api.get_pod("ml", "b")["spec"]


def test_an_unanswered_bind_keeps_the_gpus_until_the_ttl(service: ExtenderService,
                                                         api: FakeApiServer,
                                                         clock: FakeClock) -> None:
    """A 5xx (or no answer): the Binding may exist, so the GPUs stay held (with the TTL back)
    rather than being handed to the next pod; the TTL, or the watch, settles it."""
    _, top = schedule(service, api, "a")
    api.fail_bindings.add("a")
    error = service.verbs.bind(bind_args("a", top)).document()["Error"]
    assert "injected binding failure" in error
    held = holder(service, "a")
    assert held is not None and held.expires_at is not None
    assert top not in (service.verbs.filter(args(api, "b")).document()["NodeNames"] or [])
    assert api.events[-1]["reason"] == "GpuBindFailed"
    clock.now += 31  # the reservation TTL (30 s) passes: released
    assert service.verbs.filter(args(api, "b")).document()["NodeNames"] == NAMES
    assert holder(service, "a") is None


def test_a_refused_bind_releases_the_reservation(service: ExtenderService,
                                                 api: FakeApiServer) -> None:
    _, top = schedule(service, api, "a")
    del api.nodes[top]  # the API refuses for sure: 404, no Binding was created
    error = service.verbs.bind(bind_args("a", top)).document()["Error"]
    assert "not found" in error
    assert holder(service, "a") is None


def test_binding_an_unknown_pod_or_node_is_an_error(service: ExtenderService) -> None:
    assert "not found" in service.verbs.bind(bind_args("ghost", "n1")).document()["Error"]
    assert "not in the GPU inventory" in \
        service.verbs.bind(bind_args("a", "nowhere")).document()["Error"]


def test_a_recreated_pod_is_not_bound(service: ExtenderService, api: FakeApiServer) -> None:
    stale = ExtenderBindingArgs(PodName="a", PodNamespace="ml", PodUID="old-uid", Node="n1")
    assert "recreated" in service.verbs.bind(stale).document()["Error"]


def test_a_pod_without_gpus_is_bound_like_the_default_binder(
        platform: Platform) -> None:
    from tests.builders import make_pod

    api = FakeApiServer([l4_node("n1")], [make_pod("web").namespace("ml").container(
        {"cpu": "1"}).obj()])
    service = online_service(platform, api)
    assert service.verbs.bind(bind_args("web", "n1")).document() == {"Error": ""}
    assert api.get_pod("ml", "web")["spec"]["nodeName"] == "n1"
    assert "annotations" not in api.get_pod("ml", "web")["metadata"]
