"""A one-node filter answer's hold, run once the answer is out (``scheduling/deferred_hold.py``):
a burst is answered and bound exactly as with the hold made inside filter, whether the step
after each answer runs or the next verb runs the hold; every verb that reads runs a pending
hold first; a hold runs once, even when two threads ask for it at once."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from extender.inventory.store import HoldingState
from extender.model import PodKey
from extender.platform import Platform
from extender.scheduling.cycle import PodCycle
from extender.scheduling.deferred_hold import DeferredHold
from extender.server.preempt_wire import decode_preemption_args
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs
from tests.scheduling.test_warm import _burst, _service
from tests.server.conftest import online_service
from tests.sync.clusters import l4_node, whole_pod
from tests.sync.fake_api import FakeApiServer


def _books(service: ExtenderService) -> dict[str, tuple[str, tuple[int, ...], str]]:
    return {h.key.name: (h.node, h.assignment.gpu_indices, h.state.value)
            for h in service.inventory.holdings()}


def test_a_burst_is_answered_and_bound_as_with_the_hold_inside_filter(
        platform: Platform) -> None:
    cut = True  # lone winners: most answers name one node
    inline, inline_api = _service(platform, cut=cut)
    # the hold as it was: made by filter before it answers
    inline.scheduler.cut._hold = inline.scheduler.prioritize.hold_cut
    reference = _burst(inline, inline_api, warm=True, fitted=[])
    after_answer, after_api = _service(platform, cut=cut)
    by_next_verb, next_api = _service(platform, cut=cut)
    assert _burst(after_answer, after_api, warm=True, fitted=[]) == reference
    # without the step after the answer (a bind that reaches a pool thread first, or a
    # server without that step) the next verb makes the hold before it reads anything
    assert _burst(by_next_verb, next_api, warm=False, fitted=[]) == reference
    assert _books(after_answer) == _books(by_next_verb) == _books(inline)
    assert [a for a in reference if isinstance(a, dict) and a.get("Error")] == []
    one_node = sum(1 for a in reference if isinstance(a, dict)
                   and len(a.get("NodeNames") or []) == 1)
    assert one_node > 0
    holds = after_answer.scheduler.holds
    assert (holds.after_answer, holds.before_verb) == (one_node, 0)
    registry = after_answer.metrics.registry
    assert registry.get_sample_value("gpu_extender_holds_after_answer_total") == one_node
    assert registry.get_sample_value("gpu_extender_holds_before_verb_total") == 0
    holds = by_next_verb.scheduler.holds
    assert (holds.after_answer, holds.before_verb) == (0, one_node)
    assert inline.scheduler.holds.after_answer == inline.scheduler.holds.before_verb == 0


NAMES = ["n1", "n2"]


@pytest.fixture
def two_nodes(platform: Platform) -> tuple[ExtenderService, FakeApiServer]:
    """Two one-GPU nodes, a taken by n1's GPU: b fits only n2, c nowhere then."""
    api = FakeApiServer([l4_node("n1", gpus=1), l4_node("n2", gpus=1)],
                        [whole_pod(name) for name in ("a", "b", "c")])
    service = online_service(platform, api)
    verbs = service.verbs
    assert verbs.filter(_args(api, "a")).document()["NodeNames"] == NAMES
    verbs.prioritize(_args(api, "a"))
    assert verbs.bind(_bind("a", "n1")).document() == {"Error": ""}
    assert verbs.filter(_args(api, "b")).document()["NodeNames"] == ["n2"]
    assert service.scheduler.holds.pending  # answered, not held yet
    assert service.inventory.holding("uid-b") is None
    return service, api


def _args(api: FakeApiServer, name: str) -> ExtenderArgs:
    return ExtenderArgs(Pod=api.get_pod("ml", name), Nodes=None, NodeNames=list(NAMES))


def _bind(name: str, node: str) -> Any:
    return {"PodName": name, "PodNamespace": "ml", "PodUID": f"uid-{name}", "Node": node}


def _held_by_b(service: ExtenderService) -> bool:
    holding = service.inventory.holding("uid-b")
    return not service.scheduler.holds.pending and holding is not None and \
        holding.node == "n2"


def test_the_next_filter_sees_the_answered_node_held(
        two_nodes: tuple[ExtenderService, FakeApiServer]) -> None:
    service, api = two_nodes
    assert service.verbs.filter(_args(api, "c")).document()["NodeNames"] in (None, [])
    assert _held_by_b(service)


def test_the_pods_own_bind_first_binds_the_gpus_held(
        two_nodes: tuple[ExtenderService, FakeApiServer]) -> None:
    service, _ = two_nodes
    assert service.verbs.bind(_bind("b", "n2")).document() == {"Error": ""}
    assert service.scheduler.holds.before_verb == 1
    holding = service.inventory.holding("uid-b")
    assert holding is not None and holding.node == "n2" and holding.state.value == "bound"


def test_explain_and_preempt_run_a_pending_hold_first(
        two_nodes: tuple[ExtenderService, FakeApiServer]) -> None:
    service, api = two_nodes
    service.verbs.explain(api.get_pod("ml", "c"), list(NAMES))
    assert _held_by_b(service)
    service.verbs.filter(_args(api, "b"))  # b again (a retry): answered, pending again
    assert service.scheduler.holds.pending
    body = orjson.dumps({"Pod": api.get_pod("ml", "c"), "NodeNameToMetaVictims": {}})
    service.preempt(decode_preemption_args(body))
    assert _held_by_b(service)


def test_a_relist_in_between_leaves_every_pods_books_as_the_api_says(
        two_nodes: tuple[ExtenderService, FakeApiServer]) -> None:
    # b's answer is out, its hold pending; a relist then finds b bound to n2 by someone else
    # (its Binding's echo lost, say): the pending hold must not hold b's GPUs a second time,
    # nor touch a's
    service, api = two_nodes
    a_before = service.inventory.holding("uid-a")
    pods = [api.get_pod("ml", name) for name in ("a", "b", "c")]
    pods[0]["spec"]["nodeName"] = "n1"
    pods[1]["spec"]["nodeName"] = "n2"
    service.applier.replace_pods(pods)
    service.verbs.warm_next()  # the step after b's answer comes now
    assert not service.scheduler.holds.pending
    b = service.inventory.holding("uid-b")
    assert b is not None and b.node == "n2" and b.state is HoldingState.OBSERVED
    a = service.inventory.holding("uid-a")
    assert a is not None and a_before is not None and a.assignment == a_before.assignment
    assert [h.key.name for h in service.inventory.holdings()].count("b") == 1
    # c fits nowhere: both GPUs are held once each, as the API says
    assert service.verbs.filter(_args(api, "c")).document()["NodeNames"] in (None, [])


class _Recorder:
    def __init__(self, *, fail: bool = False, slow: threading.Event | None = None) -> None:
        self.held: list[str] = []
        self.fail = fail
        self.slow = slow
        self.entered = threading.Event()

    def __call__(self, cycle: PodCycle) -> None:
        self.entered.set()
        if self.slow is not None:
            assert self.slow.wait(5)
        self.held.append(cycle.pod.key.name)
        if self.fail:
            raise RuntimeError("boom")


def _cycle(name: str) -> Any:
    """What ``DeferredHold`` reads of a cycle: the pod's key (for its log line)."""
    return SimpleNamespace(pod=SimpleNamespace(key=PodKey("ml", name, f"uid-{name}")))


def test_a_deferred_hold_runs_once_and_counts_who_ran_it() -> None:
    hold = _Recorder()
    holds = DeferredHold(hold)
    holds.run()  # nothing pending: nothing to do
    holds.defer(_cycle("a"))
    assert hold.held == [] and holds.pending
    holds.run(after_answer=True)
    holds.run(after_answer=True)
    assert hold.held == ["a"] and (holds.after_answer, holds.before_verb) == (1, 0)
    holds.defer(_cycle("b"))
    holds.defer(_cycle("c"))  # the step after b's answer never came: b is held first
    assert hold.held == ["a", "b"]
    holds.run()
    assert hold.held == ["a", "b", "c"] and (holds.after_answer, holds.before_verb) == (1, 2)


def test_a_failing_hold_is_logged_and_fails_no_verb(caplog: pytest.LogCaptureFixture) -> None:
    holds = DeferredHold(_Recorder(fail=True))
    holds.defer(_cycle("a"))
    with caplog.at_level(logging.ERROR):
        holds.run()
    assert not holds.pending
    assert any("holding the answered node failed" in r.getMessage() for r in caplog.records)


def test_two_threads_asking_at_once_hold_once_and_the_second_waits_for_it() -> None:
    release = threading.Event()
    hold = _Recorder(slow=release)
    holds = DeferredHold(hold)
    holds.defer(_cycle("a"))
    first = threading.Thread(target=holds.run, kwargs={"after_answer": True})
    first.start()
    assert hold.entered.wait(5)  # the step after the answer is holding now
    second_done = threading.Event()

    def bind_thread() -> None:
        holds.run()
        second_done.set()

    second = threading.Thread(target=bind_thread)
    second.start()
    assert not second_done.wait(0.2)  # the bind waits for the hold to end
    release.set()
    first.join(5)
    second.join(5)
    assert second_done.is_set()
    assert hold.held == ["a"] and (holds.after_answer, holds.before_verb) == (1, 0)
