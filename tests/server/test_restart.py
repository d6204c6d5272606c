"""Restart safety: the annotations are the only state, and a fresh process rebuilds exactly
the same allocation from the API (nodes + pods)."""

from __future__ import annotations

from extender.inventory.store import HoldingState
from extender.platform import Platform
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from tests.builders import make_pod
from tests.server.conftest import online_service
from tests.server.invariants import assert_gpu_invariants, holdings_by_pod, node_rows
from tests.sync.clusters import mig_pod, mixed_nodes, replica_pod, vram_pod, whole_pod
from tests.sync.fake_api import FakeApiServer


def test_a_fresh_process_rebuilds_the_same_allocation(platform: Platform) -> None:
    nodes = mixed_nodes(per_kind=2)
    pods = [whole_pod("w0", 2), whole_pod("w1", 1), vram_pod("v0", "5Gi"),
            vram_pod("v1", "7Gi"), vram_pod("v2", "3Gi"), mig_pod("m0", "3g.40gb"),
            mig_pod("m1", "1g.10gb"), mig_pod("m2", "2g.20gb"), replica_pod("r0", 2),
            replica_pod("r1", 1)]
    api = FakeApiServer(nodes, pods)
    service = online_service(platform, api)
    names = [n["metadata"]["name"] for n in nodes]
    for pod in pods:
        meta = pod["metadata"]
        args = ExtenderArgs(Pod=api.get_pod("ml", meta["name"]), Nodes=None, NodeNames=names)
        assert service.verbs.filter(args).document()["NodeNames"]
        top = max(service.verbs.prioritize(args).document(), key=lambda s: s["Score"])["Host"]
        result = service.verbs.bind(ExtenderBindingArgs(
            PodName=meta["name"], PodNamespace="ml", PodUID=meta["uid"], Node=top))
        assert result.document() == {"Error": ""}
    # a pod another scheduler bound (no annotation), seen through the watch
    foreign = make_pod("foreign").namespace("batch").gpus(2).node_name("l4-1") \
        .phase("Running").obj()
    api.add_pod(foreign)
    service.applier.pod_event("ADDED", api.get_pod("batch", "foreign"))
    # a finished pod holds nothing, before or after the restart
    done = make_pod("done").namespace("batch").gpus(4).node_name("l4-0") \
        .phase("Succeeded").obj()
    api.add_pod(done)
    service.applier.pod_event("ADDED", api.get_pod("batch", "done"))

    assert all(h.state is not HoldingState.ASSUMED for h in service.inventory.holdings())
    assert_gpu_invariants(list(api.pods.values()), service.inventory)

    restarted = online_service(platform, api)
    assert node_rows(restarted.inventory.snapshot()) == node_rows(service.inventory.snapshot())
    assert holdings_by_pod(restarted.inventory) == holdings_by_pod(service.inventory)
    assert {h.state for h in restarted.inventory.holdings()} == {HoldingState.OBSERVED}

    # and the restarted process keeps placing correctly on top of it
    extra = whole_pod("w2", 2)
    api.add_pod(extra)
    args = ExtenderArgs(Pod=api.get_pod("ml", "w2"), Nodes=None, NodeNames=names)
    feasible = restarted.verbs.filter(args).document()["NodeNames"] or []
    live_feasible = service.verbs.filter(args).document()["NodeNames"] or []
    assert feasible == live_feasible


def test_a_reservation_without_a_bind_does_not_survive_a_restart(platform: Platform) -> None:
    api = FakeApiServer(mixed_nodes(per_kind=1), [whole_pod("w0", 4)])
    service = online_service(platform, api)
    args = ExtenderArgs(Pod=api.get_pod("ml", "w0"), Nodes=None, NodeNames=["l4-0"])
    service.verbs.filter(args)  # prioritize holds only for a pod our filter passed
    service.verbs.prioritize(args)
    assert service.inventory.holding("uid-w0") is not None
    restarted = online_service(platform, api)
    assert restarted.inventory.holding("uid-w0") is None
    # kube retries the bind after the restart: the new process assigns on the spot
    bind = ExtenderBindingArgs(PodName="w0", PodNamespace="ml", PodUID="uid-w0", Node="l4-0")
    assert restarted.verbs.bind(bind).document() == {"Error": ""}
