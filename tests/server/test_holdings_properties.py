"""The holdings ladder under random interleavings (issue 19, finding 1), against an oracle that
never double-books.

The service is the real one over a fake API server. The rules are what kube-scheduler and the
API can do to it, in any order: a cycle's filter and prioritize (prioritize only when filter
answered more than one node, as kube-scheduler calls it; of a pod's cached, unbound copy,
so also the retried cycle of a pod whose bind answer was lost), a prioritize alone (an invented
or out-of-order request), a bind to the node prioritize preferred or to any node, a Binding
that fails, the watch delivering the next events late, a relist, the TTL passing, a pod deleted.

The oracle is the API's own truth: after every step,

- the pods the API shows bound never share a whole GPU nor over-commit a GPU's VRAM or replicas
  (``assert_gpu_invariants``, which also checks that the inventory never recorded a conflict);
- every pod the API shows bound through us is held by the inventory on that node, with exactly
  the GPUs its ``assigned`` annotation names (so no later pod can be given them).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from extender.inventory.store import HoldingState
from extender.kube import objects
from extender.kube.annotations import decode_assignment
from extender.model import ANNOTATION_ASSIGNED
from extender.platform import Platform
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from tests.builders import make_pod
from tests.clock import FakeClock
from tests.server.conftest import online_service
from tests.server.invariants import assert_gpu_invariants
from tests.sync.clusters import t4_node
from tests.sync.fake_api import FakeApiServer

NODES = ["t4-0", "t4-1"]
PODS = {"w1": ("gpus", 1), "w2": ("gpus", 2), "w4": ("gpus", 4), "v6": ("memory", "6Gi"),
        "v12": ("memory", "12Gi"), "x4": ("gpus", 4)}
pod_names = st.sampled_from(sorted(PODS))


def pod_object(name: str) -> dict[str, Any]:
    form, amount = PODS[name]
    builder = make_pod(name).namespace("ml").uid(f"uid-{name}").accelerator("t4")
    builder = builder.gpus(amount) if form == "gpus" else builder.gpu_memory(amount)
    return builder.obj()


class Holdings(RuleBasedStateMachine):
    platform: Platform

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.api = FakeApiServer([t4_node(n) for n in NODES], [pod_object(n) for n in PODS])
        self.service = online_service(self.platform, self.api, clock=self.clock)
        self.cached = {name: self.api.get_pod("ml", name) for name in PODS}
        """kube-scheduler's copies: unbound, as created (its cache lags the Binding)."""
        self.cursor = len(self.api.log)
        self.preferred: dict[str, str] = {}

    # -- kube-scheduler ----------------------------------------------------------------------

    @rule(name=pod_names)
    def a_cycle(self, name: str) -> None:
        pod = self.cached[name]
        answer = self.service.verbs.filter(ExtenderArgs(Pod=pod, Nodes=None,
                                                        NodeNames=NODES)).document()
        feasible = answer["NodeNames"] or []
        if not feasible:
            return
        if len(feasible) == 1:  # kube-scheduler takes it: no prioritize (filter held it)
            self.preferred[name] = str(feasible[0])
            return
        scores = self.service.verbs.prioritize(ExtenderArgs(
            Pod=pod, Nodes=None, NodeNames=feasible)).document()
        best = max(scores, key=lambda s: int(s["Score"]), default=None)
        self.preferred[name] = str(best["Host"]) if best else feasible[0]

    @rule(name=pod_names)
    def prioritize_alone(self, name: str) -> None:
        self.service.verbs.prioritize(ExtenderArgs(Pod=self.cached[name], Nodes=None,
                                                   NodeNames=NODES))

    @rule(name=pod_names, anywhere=st.booleans(), node=st.sampled_from(NODES),
          fail=st.booleans())
    def bind(self, name: str, anywhere: bool, node: str, fail: bool) -> None:
        """A bind, whose answer kube-scheduler may or may not get (either way it can run the
        pod's cycle again while the pod is still unbound in its cache)."""
        target = node if anywhere or name not in self.preferred else self.preferred[name]
        if fail:
            self.api.fail_bindings.add(name)
        try:
            self.service.verbs.bind(ExtenderBindingArgs(
                PodName=name, PodNamespace="ml", PodUID=objects.uid(self.cached[name]),
                Node=target))
        finally:
            self.api.fail_bindings.discard(name)

    # -- the API -----------------------------------------------------------------------------

    @rule(count=st.integers(1, 4))
    def the_watch_delivers(self, count: int) -> None:
        for _, kind, event_type, obj in self.api.log[self.cursor:self.cursor + count]:
            if kind == "pods":
                self.service.applier.pod_event(event_type, obj)
        self.cursor = min(len(self.api.log), self.cursor + count)

    @rule()
    def relist(self) -> None:
        self.service.applier.replace_pods(self.api.list_objects("pods").items)
        self.cursor = len(self.api.log)

    @rule(seconds=st.sampled_from([1.0, 60.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds

    @rule(name=pod_names)
    def deleted_and_recreated(self, name: str) -> None:
        if ("ml", name) not in self.api.pods:
            return
        self.api.delete_pod("ml", name)
        self.api.add_pod(pod_object(name) | {"metadata": {
            "name": name, "namespace": "ml", "uid": f"uid-{name}-{len(self.api.log)}"}})
        self.cached[name] = self.api.get_pod("ml", name)

    # -- the oracle --------------------------------------------------------------------------

    @invariant()
    def never_double_booked(self) -> None:
        pods = list(self.api.pods.values())
        assert_gpu_invariants(pods, self.service.inventory)
        for pod in pods:
            node, text = objects.node_name(pod), objects.annotations(pod).get(ANNOTATION_ASSIGNED)
            if not node or text is None:
                continue
            holding = self.service.inventory.holding(objects.uid(pod))
            assert holding is not None, f"{objects.name(pod)} bound but not held"
            assert holding.state is not HoldingState.ASSUMED
            assert holding.node == node
            assert holding.assignment is not None
            assert holding.assignment.grants == decode_assignment(text).grants


def test_holdings_never_double_book(platform: Platform) -> None:
    Holdings.platform = platform
    Holdings.TestCase.settings = settings(
        max_examples=60, stateful_step_count=30, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    Holdings.TestCase().runTest()

