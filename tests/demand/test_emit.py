"""What a plan becomes: utility pods or PodTemplate + ProvisioningRequest, named
deterministically, with the type's affinity from the webhook's platform mapping."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from extender.config import load_config_text
from extender.config.demand import DemandConfig, DemandMode
from extender.config.presets import is_label_value
from extender.demand.emit import Emitter, Kind
from extender.demand.pack import Plan, PlannedNode
from extender.platform import Platform, build_platform
from tests.webhook.every_type import TYPE_LABELS, platform_for

P = pytest.param
T4_NODE = PlannedNode("t4", 1, ("d/s0", "d/s1"), 1)


def platform_of(config: dict[str, object] | None = None) -> Platform:
    return build_platform(load_config_text(yaml.safe_dump(config or {})))


def emitter(platform: Platform, **changes: object) -> Emitter:
    config = dataclasses.replace(platform.config.demand, **changes)
    assert isinstance(config, DemandConfig)
    return Emitter(platform, config, namespace="gpu", scheduler_name="gpu-scheduler")


def test_utility_pods_one_per_node() -> None:
    plan = Plan((T4_NODE, PlannedNode("t4", 1, ("d/s2",), 1)))
    first, second = emitter(platform_of()).objects(plan).objects
    assert first.kind is Kind.POD and first.name.startswith("gpu-demand-t4-")
    assert first.name.endswith("-0") and second.name == first.name[:-1] + "1"
    body = first.body
    assert body["metadata"]["namespace"] == "gpu"
    assert body["metadata"]["labels"]["gpu-extender.io/demand"] == "true"
    assert body["metadata"]["labels"]["gpu-extender.io/demand-type"] == "t4"
    assert body["metadata"]["annotations"]["gpu-extender.io/demand-pods"] == "d/s0,d/s1"
    spec = body["spec"]
    assert (spec["schedulerName"], spec["priorityClassName"],
            spec["terminationGracePeriodSeconds"]) == ("gpu-scheduler", "gpu-extender-demand", 0)
    assert spec["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "1"}
    # no typeLabel in the config: GFD's product label, every T4 spelling the extender reads
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    [expression] = term["matchExpressions"]
    assert expression["key"] == "nvidia.com/gpu.product" and "Tesla-T4" in expression["values"]
    assert first.pods == ("d/s0", "d/s1") and first.via("gpu") == f"utility pod {first.name}"


def test_same_plan_same_names() -> None:
    plan = Plan((T4_NODE,))
    assert [o.name for o in emitter(platform_of()).objects(plan).objects] == \
        [o.name for o in emitter(platform_of()).objects(plan).objects]


@pytest.mark.parametrize(("config", "key", "value"), [
    P({"admission": {"platformMapping": {"typeLabel": "gke"}}},
      "cloud.google.com/gke-accelerator", "nvidia-tesla-t4", id="the mapping's type label"),
    P({"nodeLabels": {"presets": ["eks-karpenter", "gfd"]}},
      "karpenter.k8s.aws/instance-gpu-name", "t4", id="else the first preset"),
    P({"admission": {"platformMapping": {"gpuTypes": [
        {"name": "t4", "nodeSelector": {"pool": "t4-spot"}}]}}}, "pool", "t4-spot",
      id="an explicit gpuTypes selector"),
])
def test_affinity_follows_the_platform_mapping(config: dict[str, object], key: str,
                                               value: str) -> None:
    [pod] = emitter(platform_of(config)).objects(Plan((T4_NODE,))).objects
    terms = pod.body["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    pairs = {(e["key"], v) for t in terms for e in t["matchExpressions"]
             for v in e.get("values", ())}
    assert (key, value) in pairs


def test_tolerations_and_another_mapping_are_another_shape() -> None:
    tolerant = platform_of({"admission": {"platformMapping": {"gpuTypes": [
        {"name": "t4", "tolerations": [{"key": "gpu", "operator": "Exists"}]}]}}})
    [pod] = emitter(tolerant).objects(Plan((T4_NODE,))).objects
    assert pod.body["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    [plain] = emitter(platform_of()).objects(Plan((T4_NODE,))).objects
    assert pod.name != plain.name


def test_provisioning_request_per_shape() -> None:
    # two 4-GPU L4 nodes: one PodTemplate, one ProvisioningRequest for count 2
    plan = Plan((PlannedNode("l4", 4, ("d/a",), 4), PlannedNode("l4", 4, ("d/b",), 1)))
    template, request = emitter(platform_of(), mode=DemandMode.PROVISIONING_REQUEST
                                ).objects(plan).objects
    assert (template.kind, request.kind) == (Kind.POD_TEMPLATE, Kind.PROVISIONING_REQUEST)
    assert template.name == request.name and request.name.endswith("-x2")
    assert request.body["apiVersion"] == "autoscaling.x-k8s.io/v1"
    assert request.body["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "podSets": [{"podTemplateRef": {"name": template.name}, "count": 2}]}
    spec = template.body["template"]["spec"]
    assert "schedulerName" not in spec and "priorityClassName" not in spec
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert request.pods == ("d/a", "d/b") and request.nodes == 2
    assert request.via("gpu") == f"ProvisioningRequest gpu/{request.name}"


def test_values_no_node_label_can_hold_are_left_out() -> None:
    # the catalog knows RTX PRO 6000 by "RTX PRO 6000" too: never a label value
    [pod] = emitter(platform_of()).objects(Plan((PlannedNode("rtx-pro-6000", 1, ("d/a",), 1),
                                                 ))).objects
    terms = pod.body["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    values = [v for t in terms for e in t["matchExpressions"] for v in e.get("values", ())]
    assert values and all(" " not in v and len(v) <= 63 for v in values)


@pytest.mark.parametrize("label", TYPE_LABELS)
def test_every_type_s_affinity_holds_only_label_values(label: str) -> None:
    # the emitter writes the webhook mapping's values as they are: the mapping alone leaves
    # out what no label can hold (presets.is_label_value), for every type of the catalog
    platform = platform_for(label)
    demand = emitter(platform)
    values = [v for accel in platform.catalog.types
              for affinity in [demand.shape(accel.id, 1).affinity] if affinity
              for t in affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                  "nodeSelectorTerms"]
              for e in t["matchExpressions"] for v in e.get("values", ())]
    assert values and all(is_label_value(v) for v in values), values


def test_a_type_without_a_label_is_asked_for_by_nobody() -> None:
    # the platform's own label names T4 only: an L4 cannot be asked for (an autoscaler could
    # bring any GPU), so no object; its pods are reported unserved
    platform = platform_of({
        "nodeLabels": {"custom": [{"key": "example.com/gpu", "values": {"tesla-t4": "t4"}}]},
        "admission": {"platformMapping": {"typeLabel": "example.com/gpu"}}})
    emitted = emitter(platform).objects(Plan((T4_NODE, PlannedNode("l4", 1, ("d/l",), 1))))
    assert [o.type_id for o in emitted.objects] == ["t4"]
    assert [pod for pod, _ in emitted.unmapped] == ["d/l"]
