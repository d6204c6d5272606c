"""A bind's explanation composed late, or a bind that comes late: during a burst the event
writer may compose a pod's Normal event dozens of binds after it, and kube-scheduler may bind a
pod dozens of filters after its own; by then the cycle table has let that pod's scoring go
(only ``heavy_capacity`` cycles keep it). The event must still say why, exactly as an event
composed at once does, and ``/debug/explain`` must keep the breakdown (``CycleTable``'s
``on_let_go``, ``explain.Announcer``)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.apiserver.events import EventQueue
from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs
from extender.sync.score_facts import ScoreFacts
from tests.builders import make_pod
from tests.server.conftest import online_service
from tests.sync.clusters import t4_node
from tests.sync.fake_api import FakeApiServer

NODES = [f"t4-{i}" for i in range(10)]
REPLICAS = 40
"""More than the cycle table's ``heavy_capacity`` (16): the first binds' scoring is let go
before a writer that composes at the end gets to their events."""


def _service(platform: Platform, *, cut: bool, queued: bool
             ) -> tuple[ExtenderService, FakeApiServer, EventQueue | None]:
    pods = [make_pod(f"r{i}").namespace("ml").uid(f"uid-r{i}").gpus(1).obj()
            for i in range(REPLICAS)]
    api = FakeApiServer([t4_node(n, gpus=4 + i % 3) for i, n in enumerate(NODES)], pods)
    # a queue that is never started: nothing is composed until the test pumps it
    queue = EventQueue(api) if queued else None
    service = online_service(platform, api, facts=ScoreFacts() if cut else None,
                             event_queue=queue)
    return service, api, queue


def _decide(service: ExtenderService, api: FakeApiServer, i: int) -> str:
    """Replica ``i`` through filter, the work after the answer, and prioritize when more
    than one node is answered, as kube-scheduler and the worker drive them: its best node."""
    verbs = service.verbs
    pod = api.get_pod("ml", f"r{i}")
    order = NODES[i % len(NODES):] + NODES[:i % len(NODES)]
    names = verbs.filter(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=order)
                         ).document()["NodeNames"]
    verbs.warm_next()
    if len(names) == 1:
        return str(names[0])
    scores = verbs.prioritize(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=names)).document()
    verbs.warm_next()
    return str(max(scores, key=lambda p: (p["Score"], p["Host"]))["Host"])


def _bind(service: ExtenderService, i: int, node: str) -> None:
    assert service.verbs.bind({"PodName": f"r{i}", "PodNamespace": "ml", "PodUID": f"uid-r{i}",
                               "Node": node}).document() == {"Error": ""}


def _burst(service: ExtenderService, api: FakeApiServer, *, late: int | None = None) -> None:
    """Every replica decided and bound in turn; ``late``: that replica's bind comes only
    after every other one's."""
    held = None
    for i in range(REPLICAS):
        node = _decide(service, api, i)
        if i == late:
            held = node
        else:
            _bind(service, i, node)
    if late is not None:
        assert held is not None
        _bind(service, late, held)


def _placements(api: FakeApiServer) -> dict[str, str]:
    """Each pod's placement event message."""
    return {event["pod"]: event["message"] for event in api.events
            if event["reason"] == "GpuAssigned"}


@pytest.mark.parametrize("late", ["composed", "bound"])
@pytest.mark.parametrize("cut", [True, False], ids=["exact-cut", "prioritize"])
def test_a_late_event_or_a_late_bind_explains_as_one_at_once(platform: Platform, cut: bool,
                                                              late: str) -> None:
    at_once, at_once_api, _ = _service(platform, cut=cut, queued=False)
    _burst(at_once, at_once_api)
    # composed: every event only after the whole burst; bound: the first pod's bind after
    # the 39 others' (either way more than 16 cycles later)
    service, api, queue = _service(platform, cut=cut, queued=late == "composed")
    _burst(service, api, late=0 if late == "bound" else None)
    if queue is not None:
        assert api.events == []  # nothing composed yet
        queue.pump(force=True)
    expected = _placements(at_once_api)
    assert len(expected) == REPLICAS
    # every message gives the reason after the node ("...on node t4-3: packs ...")
    assert all(": " in message for message in expected.values()), expected
    assert _placements(api) == expected
    records = service.scheduler.announcer.records
    for i in range(REPLICAS):
        kept: Any = records.get(f"uid-r{i}")
        assert kept is not None and kept.chosen.node in NODES


@pytest.mark.parametrize("cut", [True, False], ids=["exact-cut", "prioritize"])
def test_explain_of_a_bound_pod_has_its_breakdown_before_the_event_is_composed(
        platform: Platform, cut: bool) -> None:
    # the writer gathers a burst's events before composing them (events.EventPacing.gather_s):
    # until then explain answers the breakdown the bind announced, the one the event will
    # carry
    service, api, queue = _service(platform, cut=cut, queued=True)
    assert queue is not None
    _burst(service, api)
    assert api.events == []  # nothing composed yet
    announcer = service.scheduler.announcer
    before = {}
    for i in range(REPLICAS):
        assert announcer.records.get(f"uid-r{i}") is None
        early = announcer.recorded(f"uid-r{i}")
        assert early is not None
        before[i] = early.to_json()
    report = service.verbs.explain(api.get_pod("ml", "r0"))
    assert report["status"] == "bound"
    assert report["placement"]["breakdown"] == before[0]
    queue.pump(force=True)
    for i in range(REPLICAS):
        kept = announcer.records.get(f"uid-r{i}")
        assert kept is not None and kept.to_json() == before[i]
    assert announcer._announced == {}  # composed: nothing left pending
