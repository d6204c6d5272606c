"""/validate refuses a VRAM share or fraction that only ``handoff: none`` pools could hold
(docs/handoff.md: GKE), and admits one as soon as one pool that could hold it hands shares
over; a pool it could not use (another type, another selection) does not count."""

from __future__ import annotations

from typing import Any

import pytest

from extender.webhook.admit import PodAdmission
from extender.webhook.pools import NodePools
from tests.builders import PodBuilder, make_node, make_pod
from tests.webhook.helpers import platform_with, review

P = pytest.param
PLATFORM = platform_with({"platformMapping": {"enabled": False}})


def gke(name: str, accelerator: str, **labels: str) -> dict[str, Any]:
    node = make_node(name).gke(accelerator).allocatable(gpu=2)
    for key, value in labels.items():
        node.label(key, value)
    return node.obj()


def gfd(name: str, product: str) -> dict[str, Any]:  # the gfd preset: handoff cdi
    return make_node(name).gfd(product).allocatable(gpu=2).obj()


CDI = {"gpu-extender.io/handoff": "cdi"}
A100_GKE, T4_GKE = gke("gke-a100", "nvidia-a100-80gb"), gke("gke-t4", "nvidia-tesla-t4")
T4_GKE_NRI = gke("gke-t4-nri", "nvidia-tesla-t4", **CDI)
T4_GFD = gfd("gfd-t4", "Tesla-T4")


def share(type_id: str) -> PodBuilder:  # a new builder each time: builders change in place
    return make_pod("s").gpu_memory("4Gi").accelerator(type_id)


SHARE_A100, SHARE_T4 = share("a100-80gb"), share("t4")

CASES = [
    P([A100_GKE], SHARE_A100, False, id="the type only on a GKE pool: refused"),
    P([A100_GKE], make_pod("f").gpu_milli(500).accelerator("a100-80gb"), False,
      id="a fraction, the same"),
    P([A100_GKE, T4_GFD], SHARE_A100, False,
      id="a capable pool of another type does not count"),
    P([T4_GKE, T4_GKE_NRI], SHARE_T4, True,
      id="one pool of the type labelled handoff=cdi: admitted (filter picks it)"),
    P([T4_GKE, T4_GFD], SHARE_T4, True, id="a GFD pool of the type (cdi by default): admitted"),
    P([T4_GKE, T4_GFD], share("t4").node_selector("cloud.google.com/gke-accelerator",
                                                  "nvidia-tesla-t4"), False,
      id="the pod's own selection leaves only the GKE pool: refused"),
    P([T4_GKE], make_pod("s").gpu_memory("4Gi"), False,
      id="untyped: every node it could use is GKE"),
    P([A100_GKE], make_pod("s").gpu_memory("4Gi"), True,
      id="untyped, only a protected type's node (it may not use it): nothing to judge"),
    P([], SHARE_A100, True, id="no node known yet (or scaled to zero): filter judges"),
    P([A100_GKE], make_pod("w").gpus(1).accelerator("a100-80gb"), True,
      id="a whole GPU on GKE: the device plugin hands it over"),
    P([T4_GKE], make_pod("t").shared_gpus(1).accelerator("t4"), True,
      id="a time-slice replica: the device plugin hands it over"),
]


@pytest.mark.parametrize(("nodes", "pod", "allowed"), CASES)
def test_shares_only_none_pools_could_hold_are_refused(
        nodes: list[dict[str, Any]], pod: PodBuilder, allowed: bool) -> None:
    pools = NodePools(PLATFORM)
    pools.replace(nodes)
    answer = PodAdmission(PLATFORM, pools=pools).validate(review(pod.obj()))
    assert answer.allowed is allowed, answer.message
    assert answer.outcome == ("allowed" if allowed else "refused")


def test_the_refusal_names_the_field_the_value_the_nodes_and_what_is_accepted() -> None:
    pools = NodePools(PLATFORM)
    pools.replace([A100_GKE])
    answer = PodAdmission(PLATFORM, pools=pools).validate(review(SHARE_A100.obj()))
    assert answer.message == (
        "gpu-extender: spec.containers[c0].resources: 4096 MiB VRAM share on a100-80gb "
        "(metadata.labels[gpu-extender.io/accelerator]) can reach its container on none of the "
        "nodes that could hold it (1 node(s) with handoff: none: gke-a100; on GKE no NVIDIA "
        "runtime reads a share's GPU); accepted: nvidia.com/gpu: 1 on a time-sharing pool, or "
        "a GPU type whose pool hands shares over (handoff cdi or env, e.g. node label "
        "gpu-extender.io/handoff=cdi where the GPU Operator runs NRI)")


def test_watch_events_move_the_verdict_and_updates_are_not_judged() -> None:
    pools = NodePools(PLATFORM)
    webhook = PodAdmission(PLATFORM, pools=pools)
    pools.replace([T4_GKE])
    assert not webhook.validate(review(SHARE_T4.obj())).allowed
    pools.apply("ADDED", T4_GKE_NRI)
    assert webhook.validate(review(SHARE_T4.obj())).allowed
    pools.apply("DELETED", T4_GKE_NRI)
    assert not webhook.validate(review(SHARE_T4.obj())).allowed
    # an UPDATE of a running share pod is not this update's doing
    update = review(SHARE_T4.obj(), operation="UPDATE")
    update = type(update)(**{**update.__dict__, "old_object": SHARE_T4.obj()})
    assert webhook.validate(update).allowed
