"""A bind's explanation composed late: during a burst the event writer may compose a pod's
Normal event dozens of binds after it, when the cycle table has let that pod's scoring go
(only ``heavy_capacity`` cycles keep it). The event must still say why, exactly as an event
composed at once does, and ``/debug/explain`` must keep the breakdown (``PodCycle.settle``,
``explain.Announcer``)."""

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


def _burst(service: ExtenderService, api: FakeApiServer) -> None:
    """Every replica through filter, the work after the answer, prioritize when more than
    one node is answered, and bind to the best, as kube-scheduler and the worker drive
    them."""
    verbs = service.verbs
    for i in range(REPLICAS):
        pod = api.get_pod("ml", f"r{i}")
        order = NODES[i % len(NODES):] + NODES[:i % len(NODES)]
        names = verbs.filter(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=order)
                             ).document()["NodeNames"]
        verbs.warm_next()
        best = names[0]
        if len(names) > 1:
            scores = verbs.prioritize(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=names)
                                      ).document()
            verbs.warm_next()
            best = max(scores, key=lambda p: (p["Score"], p["Host"]))["Host"]
        assert verbs.bind({"PodName": f"r{i}", "PodNamespace": "ml", "PodUID": f"uid-r{i}",
                           "Node": best}).document() == {"Error": ""}


def _placements(api: FakeApiServer) -> dict[str, str]:
    """Each pod's placement event message."""
    return {event["pod"]: event["message"] for event in api.events
            if event["reason"] == "GpuAssigned"}


@pytest.mark.parametrize("cut", [True, False], ids=["exact-cut", "prioritize"])
def test_an_event_composed_after_the_burst_explains_as_one_composed_at_once(
        platform: Platform, cut: bool) -> None:
    at_once, at_once_api, _ = _service(platform, cut=cut, queued=False)
    _burst(at_once, at_once_api)
    late, late_api, queue = _service(platform, cut=cut, queued=True)
    _burst(late, late_api)
    assert queue is not None and late_api.events == []  # nothing composed yet
    queue.pump(force=True)
    expected = _placements(at_once_api)
    assert len(expected) == REPLICAS
    # every message gives the reason after the node ("...on node t4-3: packs ...")
    assert all(": " in message for message in expected.values()), expected
    assert _placements(late_api) == expected
    records = late.scheduler.announcer.records
    for i in range(REPLICAS):
        kept: Any = records.get(f"uid-r{i}")
        assert kept is not None and kept.chosen.node in NODES
