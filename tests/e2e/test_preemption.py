"""GPU-aware preemption with the real kube-scheduler (1.36.3) and kwok nodes: the extender
publishes the share capacity (so the in-tree dry run finds victims at all) and answers the
preempt verb with the fewest lower-priority pods on one GPU, or nothing.

kwok plays the kubelet: pods go Running (a start time, the newest-first order), and the victims
kube-scheduler deletes are removed (pod-delete), so the preemptor binds.

Negative scenarios wait for a condition that proves preemption was tried (a FailedScheduling
event of the preemptor, and for the extender's part its preempt metric), then check that no
pod was deleted.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kubernetes import client

from localcluster import LocalCluster
from localcluster.kwok import Kwok
from tests.e2e.gpu_helpers import (
    NAMESPACE,
    assignment,
    create_pods,
    gpu_cluster,
    gpu_pod,
    pending_message,
    wait_bound,
)

pytestmark = pytest.mark.e2e

LOW, HIGH = "low", "high"
L4 = {"nvidia.com/gpu.product": "NVIDIA-L4"}
A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
TIMEOUT_S = 120.0


@pytest.fixture
def cluster(controlplane_binaries: object, kwok_binary: Any) -> Iterator[tuple[LocalCluster,
                                                                               Kwok]]:
    with gpu_cluster() as cluster:
        kwok = Kwok.start(cluster, kwok_binary)
        scheduling = client.SchedulingV1Api(cluster.api_client())
        for name, value in ((LOW, 100), (HIGH, 1000)):
            scheduling.create_priority_class(client.V1PriorityClass(
                metadata=client.V1ObjectMeta(name=name), value=value))
        yield cluster, kwok


def pod(name: str, limits: Mapping[str, int | str], priority: str,
        labels: Mapping[str, str] = {}) -> dict[str, Any]:
    manifest = gpu_pod(name, limits, labels=labels)
    manifest["spec"]["priorityClassName"] = priority
    manifest["spec"]["terminationGracePeriodSeconds"] = 1
    return manifest


def share(name: str, gib: int, priority: str = LOW) -> dict[str, Any]:
    return pod(name, {"gpu-extender.io/gpu-memory": f"{gib}Gi"}, priority)


def fill(cluster: LocalCluster, pods: list[dict[str, Any]]) -> dict[str, int]:
    """Create ``pods`` one by one, each Running before the next: name -> GPU index."""
    gpus = {}
    for manifest in pods:
        name = manifest["metadata"]["name"]
        create_pods(cluster, [manifest])
        wait_bound(cluster, name, TIMEOUT_S)
        cluster.wait_for(lambda n=name: Kwok.running(cluster, NAMESPACE, n) or None,
                         timeout_s=TIMEOUT_S, description=f"{name} Running (kwok)")
        gpus[name] = assignment(cluster.api(), name).grants[0].index
    return gpus


def alive(cluster: LocalCluster) -> set[str]:
    """Pods neither deleted nor terminating."""
    return {p.metadata.name for p in cluster.api().list_namespaced_pod(NAMESPACE).items
            if p.metadata.deletion_timestamp is None}


def preempt_answers(cluster: LocalCluster) -> float:
    with urllib.request.urlopen(f"{cluster.extender_url}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("gpu_extender_decisions_total{") and 'verb="preempt"' in line)


def wait_tried(cluster: LocalCluster, name: str, *, extender: bool) -> str:
    message: str = cluster.wait_for(lambda: pending_message(cluster, name) or None,
                                    timeout_s=TIMEOUT_S,
                                    description=f"a FailedScheduling event for {name}")
    if extender:
        cluster.wait_for(lambda: preempt_answers(cluster) > 0 or None, timeout_s=TIMEOUT_S,
                         description="the extender's preempt answer")
    return message


def l4_node(cluster: LocalCluster, kwok: Kwok) -> None:
    kwok.create_node(cluster, "l4-0", {"nvidia.com/gpu": 2}, labels=L4)
    cluster.wait_for(lambda: Kwok.ready(cluster, "l4-0") or None, timeout_s=TIMEOUT_S,
                     description="kwok to initialize l4-0")


def test_share_evicts_the_fewest_pods_of_one_gpu(
        cluster: tuple[LocalCluster, Kwok]) -> None:
    # L4: 24 GiB. Best fit puts 16 + 8 on one GPU and 12 + 12 on the other (both full; node
    # level 48 of 48 GiB). A 14 GiB share: the 16 GiB pod alone frees 16 >= 14 on its GPU;
    # on the other GPU it takes both 12s. The fewest: the 16 GiB pod, nothing else moves.
    c, kwok = cluster
    l4_node(c, kwok)
    gpus = fill(c, [share("s16", 16), share("s8", 8), share("s12a", 12), share("s12b", 12)])
    assert gpus["s16"] == gpus["s8"] != gpus["s12a"] == gpus["s12b"]
    create_pods(c, [share("hi", 14, HIGH)])
    assert wait_bound(c, "hi", TIMEOUT_S) == "l4-0"
    assert assignment(c.api(), "hi").grants[0].index == gpus["s16"]
    assert alive(c) == {"s8", "s12a", "s12b", "hi"}


def pinned(manifest: dict[str, Any], node: str) -> dict[str, Any]:
    manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return manifest


def test_the_node_with_the_fewest_victims_among_several(
        cluster: tuple[LocalCluster, Kwok]) -> None:
    # Three L4 nodes, every GPU full of low-priority shares (each pod pinned to its node).
    # l4-0: 12 + 12 and 12 + 12: a 14 GiB share takes two pods there;
    # l4-1: 16 + 8 and 12 + 12: the 16 GiB pod alone frees 16 >= 14 on its GPU;
    # l4-2: 8 + 8 + 8 on each GPU: two of 8 free 16 >= 14, two pods.
    # The extender answers each node with its fewest pods of one GPU, kube-scheduler picks
    # the candidate with the lowest sum of victims' priorities (100 < 200): l4-1, one pod.
    c, kwok = cluster
    for name in ("l4-0", "l4-1", "l4-2"):
        kwok.create_node(c, name, {"nvidia.com/gpu": 2},
                         labels={**L4, "kubernetes.io/hostname": name})
    for name in ("l4-0", "l4-1", "l4-2"):
        c.wait_for(lambda n=name: Kwok.ready(c, n) or None, timeout_s=TIMEOUT_S,
                   description=f"kwok to initialize {name}")
    fill(c, [pinned(share(f"x{i}", 12), "l4-0") for i in range(4)])
    gpus = fill(c, [pinned(share("s16", 16), "l4-1"), pinned(share("s8", 8), "l4-1"),
                    pinned(share("s12a", 12), "l4-1"), pinned(share("s12b", 12), "l4-1")])
    assert gpus["s16"] == gpus["s8"] != gpus["s12a"] == gpus["s12b"]
    fill(c, [pinned(share(f"y{i}", 8), "l4-2") for i in range(6)])
    create_pods(c, [share("hi", 14, HIGH)])
    bound = wait_bound(c, "hi", TIMEOUT_S)
    # kube-scheduler's choice is in its Preempted events ("Preempted by pod <uid> on node
    # <node>", one per victim): its first preemption took l4-1 and s16 alone. It may preempt
    # again on another node when it retries the pod before the extender's watch has applied
    # s16's deletion (both watch the same event, and a retry as soon as kube-scheduler's cache
    # drops s16 can find l4-1 still held in the extender's view; docs/preemption.md), and then
    # binds the pod on the node of that second preemption, which it nominated last: so only
    # the first preemption is asserted, and the GPU where the pod lands on l4-1.
    events = sorted(preempted(c), key=lambda e: e[0])
    assert events, "no Preempted event"
    assert events[0][2] == "l4-1", events
    assert {victim for _, victim, node in events if node == "l4-1"} == {"s16"}, events
    if bound == "l4-1":
        assert assignment(c.api(), "hi").grants[0].index == gpus["s16"]


def preempted(c: LocalCluster) -> list[tuple[Any, str, str]]:
    """(time, victim, node) of every Preempted event in the namespace."""
    out = []
    for event in c.api().list_namespaced_event(NAMESPACE).items:
        if event.reason == "Preempted" and " on node " in (event.message or ""):
            when = event.event_time or event.first_timestamp or event.last_timestamp
            out.append((when, event.involved_object.name,
                        event.message.rsplit(" on node ", 1)[1].rstrip(".")))
    return out


def full_l4(c: LocalCluster, kwok: Kwok) -> None:
    """l4-0 with four low-priority 12 GiB shares: two per GPU, 48 of 48 GiB held."""
    l4_node(c, kwok)
    fill(c, [share("a", 12), share("b", 12), share("c", 12), share("d", 12)])


def test_share_larger_than_any_gpu_evicts_nothing(cluster: tuple[LocalCluster, Kwok]) -> None:
    # 30 GiB > 24 GiB per L4, though 48 GiB on the node: evicting frees no GPU big enough.
    c, kwok = cluster
    full_l4(c, kwok)
    create_pods(c, [share("hi", 30, HIGH)])
    wait_tried(c, "hi", extender=True)
    assert alive(c) == {"a", "b", "c", "d", "hi"}
    assert not c.api().read_namespaced_pod("hi", NAMESPACE).spec.node_name


def test_equal_priority_evicts_nothing(cluster: tuple[LocalCluster, Kwok]) -> None:
    c, kwok = cluster
    full_l4(c, kwok)
    create_pods(c, [share("same", 14, LOW)])
    wait_tried(c, "same", extender=False)
    assert alive(c) == {"a", "b", "c", "d", "same"}


def test_mig_preempts_only_a_same_profile_instance(cluster: tuple[LocalCluster, Kwok]) -> None:
    # A100-80GB, mixed strategy: one 3g.40gb (slots 0-3) and three 1g.10gb (4, 5, 6), all
    # held by low-priority pods. A high-priority 1g.10gb takes the newest 1g.10gb's start.
    c, kwok = cluster
    kwok.create_node(c, "a100-mig", {"nvidia.com/mig-3g.40gb": 1, "nvidia.com/mig-1g.10gb": 3},
                     labels={**A100, "nvidia.com/mig.strategy": "mixed"})
    c.wait_for(lambda: Kwok.ready(c, "a100-mig") or None, timeout_s=TIMEOUT_S,
               description="kwok to initialize a100-mig")
    typed = {"gpu-extender.io/accelerator": "a100-80gb"}
    fill(c, [pod("big", {"nvidia.com/mig-3g.40gb": 1}, LOW, typed)] +
         [pod(f"m{i}", {"nvidia.com/mig-1g.10gb": 1}, LOW, typed) for i in range(3)])
    create_pods(c, [pod("hi", {"nvidia.com/mig-1g.10gb": 1}, HIGH, typed)])
    assert wait_bound(c, "hi", TIMEOUT_S) == "a100-mig"
    survivors = alive(c)
    assert "big" in survivors and "hi" in survivors
    assert len(survivors) == 4  # exactly one 1g.10gb instance went
    assert assignment(c.api(), "hi").grants[0].mig_profile == "1g.10gb"


def test_untyped_pod_evicts_nothing_on_a_full_a100(cluster: tuple[LocalCluster, Kwok]) -> None:
    # Two A100s (protected) held whole by typed low-priority pods. An untyped high-priority
    # pod may never use them: in-tree preemption would evict one; the extender drops the node.
    c, kwok = cluster
    kwok.create_node(c, "a100-0", {"nvidia.com/gpu": 2}, labels=A100)
    c.wait_for(lambda: Kwok.ready(c, "a100-0") or None, timeout_s=TIMEOUT_S,
               description="kwok to initialize a100-0")
    typed = {"gpu-extender.io/accelerator": "a100-80gb"}
    fill(c, [pod("w0", {"nvidia.com/gpu": 1}, LOW, typed),
             pod("w1", {"nvidia.com/gpu": 1}, LOW, typed)])
    create_pods(c, [pod("untyped", {"nvidia.com/gpu": 1}, HIGH)])
    wait_tried(c, "untyped", extender=True)
    assert alive(c) == {"w0", "w1", "untyped"}
