"""Which pods need demand, judged on the extender's own core over an inventory fed like a
watch would (the offline cluster feeds the same applier), and what they need of which types."""

from __future__ import annotations

from typing import Any

import pytest

from extender.demand.judge import judging_scheduler
from extender.demand.metrics import DemandMetrics
from extender.demand.offers import need_of, offers, reported_vram
from extender.demand.pack import pack
from extender.demand.pending import PendingJudge, Waiting, unschedulable_since
from extender.demand.view import DemandView
from extender.inventory.store import Inventory
from extender.platform import Platform, load_platform
from extender.sync.offline import ClusterObjects, OfflineCluster

P = pytest.param
NOW = 1_796_166_000.0  # 2026-12-01T23:00:00Z
LONG_AGO = "2026-12-01T22:00:00Z"  # 3600 s before NOW
JUST_NOW = "2026-12-01T22:59:50Z"  # 10 s before NOW


def node(name: str, product: str, memory: int, gpus: int = 1) -> dict[str, Any]:
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {
                "nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": str(memory),
                "nvidia.com/gpu.count": str(gpus)}},
            "status": {"capacity": resources, "allocatable": resources}}


def pod(name: str, limits: dict[str, str], *, since: str | None = LONG_AGO,
        scheduler: str = "gpu-scheduler", node_name: str = "",
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    conditions = [] if since is None else [{"type": "PodScheduled", "status": "False",
                                            "reason": "Unschedulable",
                                            "lastTransitionTime": since}]
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "c", "image": "x", "resources": {"limits": limits}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "d", "uid": f"uid-{name}",
                         "labels": labels or {}},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending",
                       "conditions": [] if node_name else conditions}}


def nominated(candidate: dict[str, Any]) -> dict[str, Any]:
    candidate["status"]["nominatedNodeName"] = "t4-0"
    return candidate


SHARE = {"gpu-extender.io/gpu-memory": "3Gi"}
FULL_T4 = pod("full", {"nvidia.com/gpu": "1"}, node_name="t4-0", since=None)


def judged(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]
           ) -> tuple[Platform, DemandView, PendingJudge, Inventory]:
    platform = load_platform()
    inventory = Inventory(platform.catalog)
    view = DemandView(platform, inventory)
    cluster = OfflineCluster(view, inventory)
    cluster.load(ClusterObjects(nodes, pods))
    scheduler = judging_scheduler(platform, inventory, cluster, DemandMetrics())
    return platform, view, PendingJudge(platform, scheduler, view.kube, ["gpu-scheduler"],
                                        debounce_s=30, clock=lambda: NOW), inventory


@pytest.mark.parametrize(("candidate", "waiting"), [
    P(pod("s", SHARE, labels={"gpu-extender.io/accelerator": "t4"}), Waiting.DEMAND,
      id="a T4 share, the T4 full"),
    P(pod("s", SHARE, since=JUST_NOW), Waiting.DEBOUNCING, id="10 s < 30 s debounce"),
    P(pod("s", SHARE, since=None), Waiting.NOT_UNSCHEDULABLE, id="not tried yet"),
    P(pod("s", SHARE, scheduler="default-scheduler"), Waiting.NOT_OURS,
      id="another scheduler's pod"),
    P(pod("s", SHARE, labels={"gpu-extender.io/demand": "true"}), Waiting.NOT_OURS,
      id="a demand pod itself"),
    P(pod("s", {"cpu": "1"}), Waiting.NO_GPU, id="asks no GPU"),
    P(nominated(pod("s", SHARE)), Waiting.NOMINATED, id="preempting for it"),
    P(pod("s", {"gpu-extender.io/gpu-memory": "3Gi", "nvidia.com/gpu": "1"}),
      Waiting.INVALID, id="two GPU forms"),
    # 2 GiB on the L4 (23034 MiB free): fits now, kube-scheduler will place it
    P(pod("s", {"gpu-extender.io/gpu-memory": "2Gi"},
          labels={"gpu-extender.io/accelerator": "l4"}), Waiting.FITS_NOW, id="fits now"),
])
def test_who_needs_demand(candidate: dict[str, Any], waiting: Waiting) -> None:
    _, view, judge, _ = judged([node("t4-0", "Tesla-T4", 15360),
                                node("l4-0", "NVIDIA-L4", 23034)], [FULL_T4, candidate])
    wait = judge.judge(candidate)
    assert wait.waiting is waiting, wait.why
    # the view hands over every unbound pod but our own
    assert len(view.state().unbound) == (0 if waiting is Waiting.NOT_OURS and
                                         candidate["metadata"]["labels"] else 1)


def test_utility_pods_are_not_counted() -> None:
    """A bound utility pod on the new node is judged as gone: the shares fit there now."""
    utility = pod("gpu-demand-t4-x-0", {"nvidia.com/gpu": "1"}, node_name="t4-1", since=None,
                  labels={"gpu-extender.io/demand": "true"})
    _, view, judge, _ = judged([node("t4-0", "Tesla-T4", 15360),
                                node("t4-1", "Tesla-T4", 15360)],
                               [FULL_T4, utility, pod("s", SHARE)])
    state = view.state()
    assert [u["metadata"]["name"] for u in state.utility] == ["gpu-demand-t4-x-0"]
    assert "d/gpu-demand-t4-x-0" not in state.present
    assert [w.waiting for w in judge.waiting(state.unbound)] == [Waiting.FITS_NOW]


def test_four_shares_need_one_t4_by_its_reported_vram() -> None:
    # the untyped shares may use T4 and L4 (not the protected A100/H100); T4 is cheapest;
    # T4 reports 15360 MiB: 4 x 3072 = 12288 <= 15360 -> one GPU, one one-GPU T4 node
    platform, view, judge, inventory = judged(
        [node("t4-0", "Tesla-T4", 15360)],
        [FULL_T4, *(pod(f"s{i}", SHARE) for i in range(4))])
    nodes = inventory.snapshot().nodes
    assert reported_vram(nodes) == {platform.catalog.index_of("t4"): 15360}
    offered = offers(platform, platform.config.demand, nodes)
    waits = judge.waiting(view.state().unbound)
    needs = [need_of(platform, w.info, offered, nodes) for w in waits if w.info]
    assert all(n is not None and "a100-80gb" not in n.types and "t4" in n.types for n in needs)
    plan = pack([n for n in needs if n is not None], offered.values())
    assert [(n.type_id, n.gpus, n.pods) for n in plan.nodes] == \
        [("t4", 1, ("d/s0", "d/s1", "d/s2", "d/s3"))]


def test_the_condition_must_say_unschedulable() -> None:
    gated = pod("g", SHARE)
    gated["status"]["conditions"][0]["reason"] = "SchedulingGated"
    assert unschedulable_since(gated) is None
    assert unschedulable_since(pod("s", SHARE)) == NOW - 3600
