"""The ``admission:`` section: defaults, every error with its field path, unknown keys
refused, and the shipped example in default.yaml valid."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.config import load_config_text
from extender.config.admission import AdmissionConfig, GpuTypeMapping
from extender.errors import ConfigError

P = pytest.param


def errors_of(admission: Any, **top: Any) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        load_config_text(yaml.safe_dump({"admission": admission, **top}))
    return [str(e) for e in raised.value.errors]


def test_defaults() -> None:
    assert load_config_text("").admission == AdmissionConfig()


def test_a_full_section_builds() -> None:
    config = load_config_text(yaml.safe_dump({
        "nodeLabels": {"custom": [{"key": "k8s.amazonaws.com/accelerator"}]},
        "admission": {
            "warnings": False,
            "schedulerName": {"enabled": False, "name": "gpu"},
            "platformMapping": {
                "typeLabel": "k8s.amazonaws.com/accelerator",
                "gpuTypes": [{"name": "a100", "nodeSelector": {"pool": "a100"},
                              "tolerations": [{"key": "gpu", "operator": "Exists"}]}],
                "partitions": {"label": "k8s.amazonaws.com/gpu-partition-size",
                               "tolerate": True}},
            "visibleDevices": {"env": "CUDA_VISIBLE_DEVICES", "kinds": ["vram"]}}})).admission
    assert not config.warnings and not config.scheduler_name.enabled
    assert config.platform_mapping.type_label == "k8s.amazonaws.com/accelerator"
    assert config.platform_mapping.gpu_types == (GpuTypeMapping(
        "a100", {"pool": "a100"}, ({"key": "gpu", "operator": "Exists"},)),)
    assert config.platform_mapping.partitions.tolerate
    assert config.visible_devices.kinds == ("vram",)


@pytest.mark.parametrize(("admission", "expected"), [
    P({"bogus": 1}, ["admission.bogus: unknown field; accepted: platformMapping, runtimeClass, "
                     "schedulerName, visibleDevices, warnings, workloads"], id="unknown key"),
    P({"runtimeClass": {"enabled": "yes", "name": "Nvidia_CDI", "handler": "nvidia"}},
      ["admission.runtimeClass.handler: unknown field; accepted: enabled, name",
       "admission.runtimeClass.enabled: must be true or false, got 'yes'",
       "admission.runtimeClass.name: 'Nvidia_CDI' is not a RuntimeClass name (lower-case DNS "
       "subdomain)"], id="runtime class"),
    P({"workloads": "block"}, ["admission.workloads: must be one of warn, refuse, off, got "
                               "'block'"], id="an unknown workloads mode"),
    P({"warnings": "yes"}, ["admission.warnings: must be true or false, got 'yes'"],
      id="boolean"),
    P({"schedulerName": {"name": "GPU Scheduler"}},
      ["admission.schedulerName.name: 'GPU Scheduler' is not a scheduler profile name "
       "(lower-case DNS label)"], id="scheduler name"),
    P({"platformMapping": {"typeLabel": "eks"}},
      ["admission.platformMapping.typeLabel: 'eks' is neither a preset nor a key of "
       "nodeLabels.custom (the extender must read the label it writes); accepted: aks, "
       "eks-karpenter, flyte, gfd, gke, or null"], id="type label"),
    P({"platformMapping": {"gpuTypes": [{"name": "a1000", "toleration": []}]}},
      ["admission.platformMapping.gpuTypes[0].toleration: unknown field; accepted: name, "
       "nodeSelector, tolerations",
       "admission.platformMapping.gpuTypes[0].name: unknown GPU type 'a1000'; accepted: a10, "
       "a100, a100-40gb, a100-80gb, a10g, a30, a800, a800-80gb, b200, b200-180gb, gb200, h100, "
       "h100-80gb, h100-94gb, h200, h200-141gb, h800, l4, l40s, p100, rtx-pro-6000, t4, v100, "
       "v100-16gb, v100-32gb"], id="gpu type name, Flyte's singular key"),
    P({"platformMapping": {"gpuTypes": [{"name": "t4", "nodeSelector": {"pool": 4}}]}},
      ["admission.platformMapping.gpuTypes[0].nodeSelector[pool]: label value must be a "
       "string of at most 63 characters of [A-Za-z0-9-_.], beginning and ending "
       "alphanumeric, got 4; quote numbers"],
      id="selector value"),
    P({"platformMapping": {"gpuTypes": [{"name": "t4", "nodeSelector": {"pool": "t" * 64}}]}},
      ["admission.platformMapping.gpuTypes[0].nodeSelector[pool]: label value must be a "
       "string of at most 63 characters of [A-Za-z0-9-_.], beginning and ending "
       f"alphanumeric, got {'t' * 64!r}; quote numbers"],
      id="selector value of 64 characters (the API server's limit is 63)"),
    P({"platformMapping": {"gpuTypes": [{"name": "t4", "tolerations": [
        {"operator": "Equals", "effect": "NoSchedul", "value": "x"},
        {"key": "gpu", "operator": "Exists", "value": "x", "tolerationSeconds": -1}]}]}},
      ["admission.platformMapping.gpuTypes[0].tolerations[0].operator: must be one of Equal, "
       "Exists, got 'Equals'",
       "admission.platformMapping.gpuTypes[0].tolerations[0].key: is required unless "
       "operator is Exists",
       "admission.platformMapping.gpuTypes[0].tolerations[0].effect: must be one of "
       "NoSchedule, PreferNoSchedule, NoExecute (or omitted: all), got 'NoSchedul'",
       "admission.platformMapping.gpuTypes[0].tolerations[1].value: must be empty when "
       "operator is Exists, got 'x'",
       "admission.platformMapping.gpuTypes[0].tolerations[1].tolerationSeconds: must be "
       ">= 0, got -1"], id="tolerations"),
    P({"platformMapping": {"partitions": {"label": "not a label"}}},
      ["admission.platformMapping.partitions.label: 'not a label' is not a valid label key"],
      id="partition label"),
    P({"visibleDevices": {"env": "1BAD", "kinds": ["whole"]}},
      ["admission.visibleDevices.env: '1BAD' is not an environment variable name",
       "admission.visibleDevices.kinds[0]: unknown request kind 'whole'; accepted: fraction, "
       "shared, vram"], id="visible devices"),
    P([], ["admission: must be a mapping, got list []"], id="not a mapping"),
])
def test_every_error_with_its_path(admission: Any, expected: list[str]) -> None:
    assert errors_of(admission) == expected
