"""The ``demand:`` section: defaults, a full section, every error with its field path."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.config import load_config_text
from extender.config.demand import DemandConfig, DemandMode, ProvisioningClass
from extender.errors import ConfigError

P = pytest.param


def errors_of(demand: Any) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        load_config_text(yaml.safe_dump({"demand": demand}))
    return [str(e) for e in raised.value.errors]


def test_defaults() -> None:
    config = load_config_text("").demand
    assert config == DemandConfig()
    assert config.mode is DemandMode.UTILITY_PODS and config.types is None
    assert config.provisioning_class.class_name == \
        "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


def test_a_full_section_builds() -> None:
    config = load_config_text(yaml.safe_dump({"demand": {
        "mode": "provisioning-request", "types": ["t4", "L4"], "debounceSeconds": 2,
        "cooldownSeconds": 5.5, "provisioningClass": "check-capacity", "namespace": "gpu",
        "priorityClassName": "low", "gpusPerNode": 2, "gpusPerNodeByType": {"a100-80gb": 8},
        "image": "example/pause:1"}})).demand
    assert config == DemandConfig(
        mode=DemandMode.PROVISIONING_REQUEST, types=("t4", "L4"), debounce_seconds=2.0,
        cooldown_seconds=5.5, provisioning_class=ProvisioningClass.CHECK_CAPACITY,
        namespace="gpu", priority_class_name="low", gpus_per_node=2,
        gpus_per_node_by_type={"a100-80gb": 8}, image="example/pause:1")
    assert (config.gpus_for("a100-80gb"), config.gpus_for("t4")) == (8, 2)


@pytest.mark.parametrize(("demand", "expected"), [
    P({"bogus": 1}, ["demand.bogus: unknown field; accepted: cooldownSeconds, debounceSeconds, "
                     "gpusPerNode, gpusPerNodeByType, image, mode, namespace, "
                     "priorityClassName, provisioningClass, types"], id="unknown key"),
    P({"mode": "karpenter"}, ["demand.mode: must be one of utility-pods, provisioning-request, "
                              "got 'karpenter'"], id="mode"),
    P({"provisioningClass": "atomic"},
      ["demand.provisioningClass: must be one of best-effort-atomic-scale-up, check-capacity, "
       "got 'atomic'"], id="provisioning class"),
    P({"types": ["t4", "tpu"]}, ["demand.types[1]: unknown GPU type 'tpu'; accepted: "],
      id="unknown type"),
    P({"types": "t4"}, ["demand.types: must be a list, got str 't4'"], id="types not a list"),
    P({"debounceSeconds": -1}, ["demand.debounceSeconds: must be a number of seconds >= 0, "
                                "got -1"], id="negative debounce"),
    P({"cooldownSeconds": ".inf"}, ["demand.cooldownSeconds: must be a number of seconds >= 0, "
                                    "got '.inf'"], id="cooldown not a number"),
    P({"namespace": "GPU"}, ["demand.namespace: 'GPU' is not a namespace name"],
      id="namespace"),
    P({"gpusPerNode": 0}, ["demand.gpusPerNode: must be 1..16, got 0"], id="gpus per node"),
    P({"gpusPerNodeByType": {"a100": 8}},
      ["demand.gpusPerNodeByType[a100]: unknown GPU type id 'a100'; accepted: "],
      id="per type needs a type id"),
    P({"gpusPerNodeByType": {"t4": 32}},
      ["demand.gpusPerNodeByType[t4]: must be 1..16, got 32"], id="per type bound"),
    P({"priorityClassName": "Low Priority"},
      ["demand.priorityClassName: 'Low Priority' is not a PriorityClass name (lower-case DNS "
       "subdomain)"], id="priority class"),
    P("on", ["demand: must be a mapping, got str 'on'"], id="not a mapping"),
])
def test_errors(demand: Any, expected: list[str]) -> None:
    errors = errors_of(demand)
    assert len(errors) == len(expected), errors
    for error, start in zip(errors, expected, strict=True):
        assert error.startswith(start), error
