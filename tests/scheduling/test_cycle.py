"""The scheduling cycle: what each verb writes, the pin, the workload mix, template nodes."""

from __future__ import annotations

import numpy as np
import pytest

from extender.inventory.store import HoldingState
from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from tests.clock import FakeClock
from tests.server.conftest import online_service
from tests.sync.clusters import l4_node, t4_node, whole_pod
from tests.sync.fake_api import FakeApiServer

NAMES = ["n1", "n2"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api() -> FakeApiServer:
    pods = [whole_pod(name) for name in ("a", "b")]
    return FakeApiServer([l4_node("n1", gpus=2), l4_node("n2", gpus=2)], pods)


@pytest.fixture
def service(platform: Platform, api: FakeApiServer, clock: FakeClock) -> ExtenderService:
    return online_service(platform, api, clock=clock)


def args(api: FakeApiServer, name: str) -> ExtenderArgs:
    return ExtenderArgs(Pod=api.get_pod("ml", name), Nodes=None, NodeNames=list(NAMES))


def schedule(service: ExtenderService, api: FakeApiServer, name: str) -> str:
    """Filter, prioritize and bind to the top node, as kube-scheduler does."""
    assert service.verbs.filter(args(api, name)).document()["NodeNames"] == NAMES
    scores = service.verbs.prioritize(args(api, name)).document()
    top: str = max(scores, key=lambda s: s["Score"])["Host"]
    bind = ExtenderBindingArgs(PodName=name, PodNamespace="ml", PodUID=f"uid-{name}",
                               Node=top)
    assert service.verbs.bind(bind).document() == {"Error": ""}
    return top


def test_one_cycle_per_pod_version_holds_what_each_step_wrote(
        service: ExtenderService, api: FakeApiServer) -> None:
    cycles = service.scheduler.cycles
    service.verbs.filter(args(api, "a"))
    cycle = cycles.get("uid-a")
    assert cycle is not None and cycle.fit is not None and cycle.scores is None
    assert cycle.held is None
    service.verbs.prioritize(args(api, "a"))
    assert cycles.get("uid-a") is cycle  # same (UID, resourceVersion): same cycle
    assert cycle.scores is not None and cycle.held is not None
    held = service.inventory.holding("uid-a")
    assert held is not None and held.assignment is cycle.held
    assert service.verbs.fit_cache_hits == 1  # prioritize sliced filter's fit
    newer = api.get_pod("ml", "a")
    newer["metadata"]["resourceVersion"] = "999"
    service.verbs.filter(ExtenderArgs(Pod=newer, Nodes=None, NodeNames=list(NAMES)))
    fresh = cycles.get("uid-a")
    assert fresh is not None and fresh is not cycle and fresh.held is None


def test_pin_flips_the_state_without_a_generation_bump(service: ExtenderService,
                                                       api: FakeApiServer) -> None:
    service.verbs.filter(args(api, "a"))
    service.verbs.prioritize(args(api, "a"))
    held = service.inventory.holding("uid-a")
    assert held is not None and held.expires_at is not None and held.assignment is not None
    before = service.inventory.snapshot()
    assert service.inventory.pin("uid-a", held.assignment)
    after = service.inventory.snapshot()
    assert after is before  # nothing changed that a snapshot shows: same generation, arrays
    pinned = service.inventory.holding("uid-a")
    assert pinned is not None and pinned.state is HoldingState.ASSUMED
    assert pinned.expires_at is None and pinned.assignment is held.assignment


def test_pin_refuses_a_hold_that_is_gone_or_replaced(service: ExtenderService,
                                                     api: FakeApiServer,
                                                     clock: FakeClock) -> None:
    service.verbs.filter(args(api, "a"))
    service.verbs.prioritize(args(api, "a"))
    held = service.inventory.holding("uid-a")
    assert held is not None and held.assignment is not None
    clock.now += 3600
    service.inventory.expire()  # the TTL passed and the sweep released it
    assert not service.inventory.pin("uid-a", held.assignment)
    service.verbs.filter(args(api, "a"))
    service.verbs.prioritize(args(api, "a"))  # a new hold: another assignment object
    assert not service.inventory.pin("uid-a", held.assignment)


def test_only_placed_pods_teach_the_workload_mix(service: ExtenderService,
                                                 api: FakeApiServer) -> None:
    mix = service.workload
    service.verbs.filter(args(api, "a"))
    service.verbs.prioritize(args(api, "a"))
    assert mix.typical(1.0) == {}  # judged and held, not placed: not learned
    schedule(service, api, "a")
    learned = mix.typical(1.0)
    assert len(learned) == 1
    version = mix.version
    # the watch shows the bound pod next: the same pod is not counted twice
    service.applier.pod_event("MODIFIED", api.get_pod("ml", "a"))
    assert mix.typical(1.0) == learned and mix.version == version


def test_a_restart_relearns_the_mix_from_the_running_pods(platform: Platform) -> None:
    api = FakeApiServer([l4_node("n1", gpus=2), t4_node("n2", gpus=2)],
                        [whole_pod("a", gpu_type="l4"), whole_pod("b", 2, gpu_type="t4")])
    live = online_service(platform, api)
    for name, node in (("a", "n1"), ("b", "n2")):
        pod = ExtenderArgs(Pod=api.get_pod("ml", name), Nodes=None, NodeNames=[node])
        assert live.verbs.filter(pod).document()["NodeNames"] == [node]
        bind = ExtenderBindingArgs(PodName=name, PodNamespace="ml", PodUID=f"uid-{name}",
                                   Node=node)
        assert live.verbs.bind(bind).document() == {"Error": ""}
    restarted = online_service(platform, api)
    learned = live.workload.typical(1.0)
    assert len(learned) == 2
    assert restarted.workload.typical(1.0) == pytest.approx(learned)


def test_prioritize_judges_template_nodes_as_filter_does(service: ExtenderService,
                                                         api: FakeApiServer) -> None:
    template = l4_node("template-l4", gpus=2)  # a node group's template: not in the inventory
    too_small = t4_node("template-t4", gpus=1)  # the pod asks for an L4
    items = [n for n in api.list_objects("nodes").items if n["metadata"]["name"] == "n1"]
    pod = ExtenderArgs(Pod=api.get_pod("ml", "a"), NodeNames=None,
                       Nodes={"items": [*items, template, too_small]})
    answer = service.verbs.filter(pod).document()
    feasible = [n["metadata"]["name"] for n in answer["Nodes"]["items"]]
    assert feasible == ["n1", "template-l4"]
    scores = {s["Host"]: s["Score"] for s in service.verbs.prioritize(pod).document()}
    assert scores.get("template-l4", 0) > 0 and "template-t4" not in scores
    held = service.inventory.holding("uid-a")
    assert held is not None and held.node == "n1"  # only a real node can be held


def test_an_invalid_request_is_refused_by_every_verb_with_the_decoders_message(
        service: ExtenderService, api: FakeApiServer) -> None:
    pod = api.get_pod("ml", "a")
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "half"
    bad = ExtenderArgs(Pod=pod, Nodes=None, NodeNames=list(NAMES))
    unresolvable = service.verbs.filter(bad).document()["FailedAndUnresolvableNodes"]
    message = unresolvable["n1"]
    assert message.startswith("invalid GPU request: ") and "half" in message
    assert service.verbs.prioritize(bad).document() == []
    cycle = service.scheduler.cycles.get("uid-a")
    assert cycle is not None and cycle.pod.error == message
    assert np.array_equal(sorted(unresolvable), NAMES)
