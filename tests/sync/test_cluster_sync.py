"""The online service end to end over an in-memory API: list, watch, bind, observe, reconcile."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from extender.inventory.store import HoldingState
from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from extender.sync.cluster import ClusterSync
from tests.builders import make_pod
from tests.sync.clusters import l4_node, mixed_nodes, whole_pod
from tests.sync.fake_api import FakeApiServer
from tests.waiting import eventually


@pytest.fixture
def api() -> FakeApiServer:
    running = make_pod("running").namespace("ml").gpus(2).node_name("l4-0").phase("Running")
    return FakeApiServer(mixed_nodes(per_kind=1), [running.obj(), whole_pod("new", 1)])


@pytest.fixture
def service(platform: Platform, api: FakeApiServer) -> Iterator[ExtenderService]:
    service = ExtenderService.online(platform, api, watch_timeout_seconds=5)
    assert service.sync is not None
    service.sync = ClusterSync(api, service.applier, service.inventory,
                               reconcile_interval_seconds=0, backoff_initial=0.005,
                               backoff_max=0.02, on_repairs=service.metrics.repairs)
    service.start()
    yield service
    service.stop()


def test_ready_after_both_lists_then_binds_are_observed_through_the_watch(
        service: ExtenderService, api: FakeApiServer) -> None:
    eventually(service.ready)
    running = service.inventory.holding("uid-running")
    assert running is not None and running.assignment is not None  # inferred: no annotation
    args = ExtenderArgs(Pod=api.get_pod("ml", "new"), Nodes=None, NodeNames=["l4-0"])
    assert service.verbs.filter(args).document()["NodeNames"] == ["l4-0"]
    service.verbs.prioritize(ExtenderArgs(Pod=args["Pod"], Nodes=None,
                                          NodeNames=["l4-0", "t4-0"]))
    bind = ExtenderBindingArgs(PodName="new", PodNamespace="ml", PodUID="uid-new", Node="l4-0")
    assert service.verbs.bind(bind).document() == {"Error": ""}

    def observed() -> bool:
        holding = service.inventory.holding("uid-new")
        return holding is not None and holding.state is HoldingState.OBSERVED
    eventually(observed)
    api.delete_pod("ml", "running")
    eventually(lambda: service.inventory.holding("uid-running") is None)
    api.add_node(l4_node("l4-late"))
    eventually(lambda: "l4-late" in service.inventory.snapshot().node_index)


def test_reconcile_repairs_drift_the_watch_missed_and_counts_it(
        service: ExtenderService, api: FakeApiServer) -> None:
    eventually(service.ready)
    assert service.sync is not None
    # drift: the API has a pod the watch never delivered (e.g. lost in a 410 window)
    api.add_pod(make_pod("ghost").namespace("ml").gpus(1).node_name("l4-0").obj())
    api.log.pop()
    time.sleep(0.05)
    assert service.inventory.holding("uid-ghost") is None
    service.sync.reconciler.reconcile_now()
    eventually(lambda: service.sync is not None
               and service.sync.reconciler.repairs["pods_added"] == 1)
    assert service.inventory.holding("uid-ghost") is not None
    assert b'gpu_extender_reconcile_repairs_total{repair="pods_added",resource="pods"} 1.0' \
        in service.metrics.exposition()


def test_stop_ends_every_thread(platform: Platform, api: FakeApiServer) -> None:
    service = ExtenderService.online(platform, api)
    service.start()
    eventually(service.ready)
    service.stop()
    assert service.sync is not None
    for watcher in (service.sync.nodes, service.sync.pods):
        assert watcher._thread is not None and not watcher._thread.is_alive()


def test_a_node_whose_gpus_cannot_be_decoded_gets_one_warning_event(
        platform: Platform) -> None:
    from tests.builders import make_node

    mystery = make_node("mystery-0").gfd("Mystery-X1", count=2).allocatable(gpu=2).obj()
    mystery["metadata"]["uid"] = "uid-mystery-0"
    api = FakeApiServer([*mixed_nodes(per_kind=1), mystery], [])
    service = ExtenderService.online(platform, api, watch_timeout_seconds=5)
    service.start()
    try:
        eventually(service.ready)
        bad = make_node("bad-0").annotation("gpu-extender.io/gpus", "{not json").allocatable(
            gpu=1).obj()
        api.add_node(bad)
        eventually(lambda: len([e for e in api.events if "node" in e]) == 2)
        api.add_node(mystery)  # the same node again, same problems: no second warning
        time.sleep(0.2)
    finally:
        service.stop()
    warnings = sorted((e for e in api.events if "node" in e), key=lambda e: e["node"])
    assert [(e["node"], e["reason"], e["type"]) for e in warnings] == [
        ("bad-0", "GpuDecodeFailed", "Warning"), ("mystery-0", "GpuDecodeFailed", "Warning")]
    assert warnings[1]["uid"] == "uid-mystery-0"
    assert "'Mystery-X1' is not in the accelerator catalog" in warnings[1]["message"]
    assert "not JSON" in warnings[0]["message"]
