"""Validation of the defaulted ``admission:`` tree: every problem with its field path.

It reports through the same collector as the rest of the config (``Checks`` is the part of it
used here), so ``check-config`` prints admission errors like any other.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from extender.catalog import Catalog
from extender.config.admission.types import SHARE_KINDS, WORKLOAD_MODES
from extender.config.presets import LABEL_VALUE_RULE, PRESETS, is_label_value
from extender.errors import join_accepted

ADMISSION_KEYS = ("warnings", "workloads", "schedulerName", "platformMapping", "visibleDevices",
                  "runtimeClass")
MAPPING_KEYS = ("enabled", "typeLabel", "gpuTypes", "partitions")
GPU_TYPE_KEYS = ("name", "nodeSelector", "tolerations")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
OPERATORS = ("Equal", "Exists")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                            r"(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class Checks(Protocol):
    def add(self, path: str, message: str) -> None: ...
    def unknown_keys(self, path: str, value: Mapping[str, Any],
                     accepted: Collection[str]) -> None: ...
    def mapping(self, path: str, value: object) -> bool: ...
    def sequence(self, path: str, value: object) -> bool: ...
    def boolean(self, path: str, value: object) -> bool: ...
    def string(self, path: str, value: object, pattern: re.Pattern[str] | None = None,
               what: str = "") -> bool: ...
    def integer(self, path: str, value: object, *, minimum: int,
                maximum: int | None = None) -> bool: ...


def validate_admission(errors: Checks, admission: object, catalog: Catalog,
                       node_labels: object) -> None:
    """Check ``admission`` against the catalog and the node label keys the extender reads."""
    if not errors.mapping("admission", admission):
        return
    assert isinstance(admission, dict)
    errors.unknown_keys("admission", admission, ADMISSION_KEYS)
    errors.boolean("admission.warnings", admission.get("warnings"))
    if admission.get("workloads") not in WORKLOAD_MODES:
        errors.add("admission.workloads", f"must be one of {', '.join(WORKLOAD_MODES)}, got "
                   f"{admission.get('workloads')!r}")
    _validate_switch(errors, "admission.schedulerName", admission.get("schedulerName"),
                     _DNS_LABEL, "a scheduler profile name (lower-case DNS label)")
    _validate_mapping(errors, admission.get("platformMapping"), catalog,
                      _custom_keys(node_labels))
    _validate_devices(errors, admission.get("visibleDevices"))
    _validate_switch(errors, "admission.runtimeClass", admission.get("runtimeClass"),
                     _DNS_SUBDOMAIN, "a RuntimeClass name (lower-case DNS subdomain)")


def _validate_switch(errors: Checks, path: str, value: object, name: re.Pattern[str],
                     what: str) -> None:
    """A ``{enabled, name}`` section."""
    if errors.mapping(path, value):
        assert isinstance(value, dict)
        errors.unknown_keys(path, value, ("enabled", "name"))
        errors.boolean(f"{path}.enabled", value.get("enabled"))
        errors.string(f"{path}.name", value.get("name"), name, what)


def _custom_keys(node_labels: object) -> list[str]:
    custom = node_labels.get("custom") if isinstance(node_labels, dict) else None
    if not isinstance(custom, list):  # a wrong type is nodeLabels' own validation's to report
        return []
    return [m["key"] for m in custom if isinstance(m, dict) and isinstance(m.get("key"), str)]


def _validate_mapping(errors: Checks, mapping: object, catalog: Catalog,
                      custom_keys: list[str]) -> None:
    path = "admission.platformMapping"
    if not errors.mapping(path, mapping):
        return
    assert isinstance(mapping, dict)
    errors.unknown_keys(path, mapping, MAPPING_KEYS)
    errors.boolean(f"{path}.enabled", mapping.get("enabled"))
    type_label = mapping.get("typeLabel")
    accepted = [*PRESETS, *custom_keys]
    if type_label is not None and type_label not in accepted:
        errors.add(f"{path}.typeLabel",
                   f"{type_label!r} is neither a preset nor a key of nodeLabels.custom (the "
                   f"extender must read the label it writes); accepted: "
                   f"{join_accepted(accepted)}, or null")
    gpu_types = mapping.get("gpuTypes")
    if errors.sequence(f"{path}.gpuTypes", gpu_types):
        assert isinstance(gpu_types, list)
        for i, entry in enumerate(gpu_types):
            _validate_gpu_type(errors, f"{path}.gpuTypes[{i}]", entry, catalog)
    partitions = mapping.get("partitions")
    where = f"{path}.partitions"
    if errors.mapping(where, partitions):
        assert isinstance(partitions, dict)
        errors.unknown_keys(where, partitions, ("enabled", "label", "tolerate"))
        errors.boolean(f"{where}.enabled", partitions.get("enabled"))
        errors.boolean(f"{where}.tolerate", partitions.get("tolerate"))
        if partitions.get("label") is not None:
            errors.string(f"{where}.label", partitions["label"], _LABEL_KEY, "a valid label key")


def _validate_gpu_type(errors: Checks, path: str, entry: object, catalog: Catalog) -> None:
    if not errors.mapping(path, entry):
        return
    assert isinstance(entry, dict)
    errors.unknown_keys(path, entry, GPU_TYPE_KEYS)
    name = entry.get("name")
    if errors.string(f"{path}.name", name) and catalog.resolve(str(name)) is None:
        errors.add(f"{path}.name", f"unknown GPU type {name!r}; accepted: "
                                   f"{join_accepted(catalog.accepted_names())}")
    selector = entry.get("nodeSelector", {})
    if selector is not None and errors.mapping(f"{path}.nodeSelector", selector):
        assert isinstance(selector, dict)
        for key, value in selector.items():
            where = f"{path}.nodeSelector[{key}]"
            errors.string(where, key, _LABEL_KEY, "a valid label key")
            if not isinstance(value, str) or not is_label_value(value):
                errors.add(where, f"label value must be a string of {LABEL_VALUE_RULE}, got "
                                  f"{value!r}; quote numbers")
    tolerations = entry.get("tolerations", [])
    if tolerations is not None and errors.sequence(f"{path}.tolerations", tolerations):
        assert isinstance(tolerations, list)
        for j, toleration in enumerate(tolerations):
            _validate_toleration(errors, f"{path}.tolerations[{j}]", toleration)


def _validate_toleration(errors: Checks, path: str, toleration: object) -> None:
    if not errors.mapping(path, toleration):
        return
    assert isinstance(toleration, dict)
    errors.unknown_keys(path, toleration, TOLERATION_KEYS)
    operator = toleration.get("operator", "Equal")
    if operator not in OPERATORS:
        errors.add(f"{path}.operator", f"must be one of {', '.join(OPERATORS)}, got {operator!r}")
    if "key" in toleration:
        errors.string(f"{path}.key", toleration["key"], _LABEL_KEY, "a valid taint key")
    elif operator != "Exists":
        errors.add(f"{path}.key", "is required unless operator is Exists")
    value = toleration.get("value")
    if operator == "Exists" and value:
        errors.add(f"{path}.value", f"must be empty when operator is Exists, got {value!r}")
    elif value is not None and (not isinstance(value, str) or not is_label_value(value)):
        errors.add(f"{path}.value", f"must be a taint value string, got {value!r}")
    effect = toleration.get("effect")
    if effect is not None and effect not in EFFECTS:
        errors.add(f"{path}.effect", f"must be one of {', '.join(EFFECTS)} (or omitted: all), "
                                     f"got {effect!r}")
    if "tolerationSeconds" in toleration:
        errors.integer(f"{path}.tolerationSeconds", toleration["tolerationSeconds"], minimum=0)


def _validate_devices(errors: Checks, devices: object) -> None:
    path = "admission.visibleDevices"
    if not errors.mapping(path, devices):
        return
    assert isinstance(devices, dict)
    errors.unknown_keys(path, devices, ("enabled", "env", "kinds"))
    errors.boolean(f"{path}.enabled", devices.get("enabled"))
    errors.string(f"{path}.env", devices.get("env"), _ENV_NAME, "an environment variable name")
    kinds = devices.get("kinds")
    if errors.sequence(f"{path}.kinds", kinds):
        assert isinstance(kinds, list)
        for i, kind in enumerate(kinds):
            if kind not in SHARE_KINDS:
                errors.add(f"{path}.kinds[{i}]", f"unknown request kind {kind!r}; accepted: "
                                                 f"{join_accepted(SHARE_KINDS)}")
