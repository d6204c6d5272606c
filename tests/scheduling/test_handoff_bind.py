"""The CDI handoff the one-write bind carries, and the pools that refuse shares
(scheduling/handoff.py): through the service's own verbs over the fake API server."""

from __future__ import annotations

from typing import Any

import pytest

from extender.config.loader import load_config_text
from extender.config.types import HandoffConfig, HandoffMode
from extender.model import ANNOTATION_ASSIGNED, Assignment, GpuGrant, RequestKind
from extender.platform import Platform
from extender.scheduling.handoff import (
    CDI_CONTAINER_PREFIX,
    handoff_annotations,
    node_mode,
    share_containers,
)
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from tests.builders import NodeBuilder, gpu_entry, make_pod
from tests.server.conftest import online_service
from tests.sync.fake_api import FakeApiServer

JSON = dict[str, Any]


def t4_node(name: str, *, uuids: bool = True, **labels: str) -> JSON:
    builder = NodeBuilder(name).gfd("Tesla-T4", count=2).allocatable(gpu=2)
    for key, value in labels.items():
        builder.label(key.replace("__", "/"), value)
    if uuids:
        builder.gpus_annotation([gpu_entry(0, "t4", 15360, uuid="GPU-aaaa"),
                                 gpu_entry(1, "t4", 15360, uuid="GPU-bbbb")])
    return builder.obj()


def schedule(platform: Platform, api: FakeApiServer, name: str, node: str) -> JSON:
    service = online_service(platform, api)
    pod = api.get_pod("ml", name)
    args = ExtenderArgs(Pod=pod, Nodes=None, NodeNames=[node])
    assert service.verbs.filter(args).document()["NodeNames"] == [node]
    service.verbs.prioritize(args)
    bound = service.verbs.bind(ExtenderBindingArgs(
        PodName=name, PodNamespace="ml", PodUID=pod["metadata"]["uid"], Node=node))
    assert bound.document() == {"Error": ""}
    annotations: JSON = api.get_pod("ml", name)["metadata"]["annotations"]
    return annotations


def cdi(annotations: JSON) -> JSON:
    return {k: v for k, v in annotations.items() if k.startswith("nvidia.cdi.k8s.io/")}


@pytest.mark.parametrize(("pod", "expected"), [
    # a 4 GiB share in one container of two: only that container gets the device
    pytest.param(make_pod("p").namespace("ml").container({"cpu": "1"}, name="sidecar")
                 .container(limits={"gpu-extender.io/gpu-memory": "4Gi"}, name="train"),
                 {"train"}, id="vram-one-of-two"),
    # 300 + 200 thousandths in two containers: both hold the (one) share
    pytest.param(make_pod("p").namespace("ml")
                 .container(limits={"gpu-extender.io/gpu-milli": 300}, name="a")
                 .container(limits={"gpu-extender.io/gpu-milli": 200}, name="b"),
                 {"a", "b"}, id="fraction-two"),
    # HAMi's form maps onto a VRAM share
    pytest.param(make_pod("p").namespace("ml")
                 .container(limits={"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000},
                            name="hami"), {"hami"}, id="hami-gpumem"),
    # KAI's pod-level annotation: the first container
    pytest.param(make_pod("p").namespace("ml").annotation("gpu-fraction", "0.5")
                 .container({"cpu": "1"}, name="first").container({"cpu": "1"}, name="second"),
                 {"first"}, id="kai-first-container"),
])
def test_the_binding_names_the_uuid_for_every_container_holding_the_share(
        platform: Platform, pod: Any, expected: set[str]) -> None:
    api = FakeApiServer([t4_node("t4-0")], [pod.obj()])
    annotations = schedule(platform, api, "p", "t4-0")
    devices = cdi(annotations)
    assert set(devices) == {CDI_CONTAINER_PREFIX + name for name in expected}
    # the UUID the assignment names (one GPU of two, the one the extender chose)
    chosen = '"GPU-aaaa"' if '"GPU-aaaa"' in annotations[ANNOTATION_ASSIGNED] else '"GPU-bbbb"'
    assert set(devices.values()) == {"nvidia.com/gpu=" + chosen.strip('"')}
    assert not any(e["reason"] == "GpuUuidUnknown" for e in api.events)


@pytest.mark.parametrize("pod", [
    pytest.param(make_pod("p").namespace("ml").gpus(1), id="whole"),
    pytest.param(make_pod("p").namespace("ml").gpus(2), id="whole-two"),
])
def test_device_plugin_pods_get_no_cdi_annotation(platform: Platform, pod: Any) -> None:
    api = FakeApiServer([t4_node("t4-0")], [pod.obj()])
    annotations = schedule(platform, api, "p", "t4-0")
    assert ANNOTATION_ASSIGNED in annotations
    assert cdi(annotations) == {}


def test_no_uuid_names_the_index_and_says_so(platform: Platform) -> None:
    pod = make_pod("p").namespace("ml").gpu_memory("4Gi").obj()
    api = FakeApiServer([t4_node("t4-0", uuids=False)], [pod])
    annotations = schedule(platform, api, "p", "t4-0")
    (value,) = cdi(annotations).values()
    assert value in ("nvidia.com/gpu=0", "nvidia.com/gpu=1")
    (event,) = [e for e in api.events if e["reason"] == "GpuUuidUnknown"]
    assert event["type"] == "Warning" and "publishes no UUID" in event["message"]


def test_an_env_pool_gets_the_env_only(platform: Platform) -> None:
    pod = make_pod("p").namespace("ml").gpu_memory("4Gi").obj()
    api = FakeApiServer([t4_node("t4-0", **{"gpu-extender.io__handoff": "env"})], [pod])
    annotations = schedule(platform, api, "p", "t4-0")
    assert cdi(annotations) == {}
    assert "gpu-extender.io/visible-devices" in annotations


def test_a_none_pool_refuses_shares_and_says_what_to_write(platform: Platform) -> None:
    gke = NodeBuilder("gke-0").gke("nvidia-tesla-t4", count=2).allocatable(gpu=2).obj()
    labelled = t4_node("t4-none", **{"gpu-extender.io__handoff": "none"})
    pods = [make_pod("share").namespace("ml").gpu_memory("4Gi").obj(),
            make_pod("whole").namespace("ml").gpus(1).obj()]
    api = FakeApiServer([gke, labelled, t4_node("t4-cdi")], pods)
    service = online_service(platform, api)
    names = ["gke-0", "t4-none", "t4-cdi"]
    share = service.verbs.filter(ExtenderArgs(Pod=api.get_pod("ml", "share"), Nodes=None,
                                              NodeNames=names)).document()
    assert share["NodeNames"] == ["t4-cdi"]
    for node in ("gke-0", "t4-none"):
        message = share["FailedAndUnresolvableNodes"][node]
        assert "handoff: none" in message and "nvidia.com/gpu: 1" in message
    # a whole GPU is the device plugin's to hand over: every pool takes it
    whole = service.verbs.filter(ExtenderArgs(Pod=api.get_pod("ml", "whole"), Nodes=None,
                                              NodeNames=names)).document()
    assert sorted(whole["NodeNames"]) == sorted(names)


@pytest.mark.parametrize(("labels", "mode"), [
    ({}, HandoffMode.CDI),                                                   # the default
    ({"cloud.google.com/gke-accelerator": "nvidia-l4"}, HandoffMode.NONE),   # GKE preset
    ({"cloud.google.com/gke-accelerator": "nvidia-l4",
      "gpu-extender.io/handoff": "cdi"}, HandoffMode.CDI),                   # the pool's label wins
    ({"gpu-extender.io/handoff": "env"}, HandoffMode.ENV),
    ({"gpu-extender.io/handoff": "bogus"}, HandoffMode.CDI),                 # unknown: not a mode
])
def test_node_mode(labels: dict[str, str], mode: HandoffMode) -> None:
    assert node_mode(HandoffConfig(), labels) is mode


def test_a_container_name_too_long_for_an_annotation_key_is_skipped_and_said() -> None:
    # "container." (10) + 53 = 63 characters: the longest annotation name part
    assignment = Assignment("n", RequestKind.VRAM, (GpuGrant(0, 1024, uuid="GPU-a"),))
    fits, long = "a" * 53, "b" * 54
    handoff = handoff_annotations(assignment, (fits, long), HandoffMode.CDI)
    assert handoff.annotations == {CDI_CONTAINER_PREFIX + fits: "nvidia.com/gpu=GPU-a"}
    assert handoff.too_long == (long,)


def test_share_containers_skips_cpu_containers(platform: Platform) -> None:
    pod = make_pod("p").container({"cpu": "1"}, name="a") \
        .init_container(limits={"gpu-extender.io/gpu-memory": "1Gi"}, name="warm").obj()
    assert share_containers(platform.pods, pod) == ("warm",)
    assert handoff_annotations(None, ("a",), HandoffMode.CDI).annotations == {}


def test_handoff_config_is_validated_with_field_paths() -> None:
    with pytest.raises(Exception) as raised:
        load_config_text("handoff: {default: x, presets: {foo: cdi, gke: y}, nodeLabel: 3}")
    text = str(raised.value)
    for expected in ("handoff.default: unknown handoff 'x'; accepted: cdi, env, none",
                     "handoff.presets[foo]: unknown label preset 'foo'",
                     "handoff.presets[gke]: unknown handoff 'y'",
                     "handoff.nodeLabel: must be a label key, got 3"):
        assert expected in text
    config = load_config_text("handoff: {default: env, presets: {}}").handoff
    assert config == HandoffConfig(default=HandoffMode.ENV, presets={})
