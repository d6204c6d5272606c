"""Config for the platform parts: instance-type overrides, the Flyte label keys and the foreign
request forms (HAMi, KAI, per-node VRAM resources). Defaults, validation and building in one
small module so that ``validation.py`` and ``loader.py`` only call in."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from extender.catalog import Catalog, normalize_name
from extender.catalog.instance_types import shipped_instance_types
from extender.config.types import (
    FlyteLabels,
    ForeignFormsConfig,
    InstanceTypeEntry,
    VramResource,
)
from extender.errors import shown

FOREIGN_FORMS_KEYS = ("hami", "kai", "vramResources")
VRAM_RESOURCE_KEYS = ("name", "unit")
VRAM_UNITS: dict[str, int] = {"GiB": 1024, "MiB": 1, "quantity": 0}
"""Unit of a VRAM resource value -> MiB per unit (``quantity``: a byte quantity like 4Gi)."""
FLYTE_KEYS = ("deviceNodeLabel", "partitionSizeNodeLabel")
INSTANCE_TYPE_KEYS = ("type", "count")

DEFAULT_VRAM_RESOURCES: list[dict[str, Any]] = [
    # gpushare-scheduler-extender's resource, in GiB (AliyunContainerService docs).
    {"name": "aliyun.com/gpu-mem", "unit": "GiB"},
    # Veriff's per-node memory resource ("How Veriff shares GPUs"); unit assumed GiB.
    {"name": "veriff.com/gpu-memory", "unit": "GiB"},
]
_RESOURCE_NAME = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*"
    r"[A-Za-z0-9])?$")


class Errors(Protocol):
    """The part of validation's error collector used here."""

    def add(self, path: str, message: str) -> None: ...
    def unknown_keys(self, path: str, value: Mapping[str, Any],
                     accepted: tuple[str, ...]) -> None: ...
    def mapping(self, path: str, value: object) -> bool: ...
    def sequence(self, path: str, value: object) -> bool: ...
    def boolean(self, path: str, value: object) -> bool: ...


def apply_platform_defaults(out: dict[str, Any]) -> None:
    labels = out.get("nodeLabels")
    if isinstance(labels, dict):
        labels.setdefault("instanceTypes", {})
        flyte = labels.setdefault("flyte", {})
        if isinstance(flyte, dict):
            flyte.setdefault("deviceNodeLabel", FlyteLabels.device_key)
            flyte.setdefault("partitionSizeNodeLabel", FlyteLabels.partition_key)
    forms = out.setdefault("foreignForms", {})
    if isinstance(forms, dict):
        forms.setdefault("hami", True)
        forms.setdefault("kai", True)
        forms.setdefault("vramResources", [dict(r) for r in DEFAULT_VRAM_RESOURCES])


# -- validation -------------------------------------------------------------------------------

def validate_instance_types(errors: Errors, value: object, catalog: Catalog) -> None:
    """``nodeLabels.instanceTypes``: name -> {type, count}; two spellings of one name that
    disagree are a conflict."""
    path = "nodeLabels.instanceTypes"
    if not errors.mapping(path, value):
        return
    assert isinstance(value, dict)
    seen: dict[str, tuple[str, object]] = {}
    for name, entry in value.items():
        where = f"{path}[{name}]"
        if not errors.mapping(where, entry):
            continue
        errors.unknown_keys(where, entry, INSTANCE_TYPE_KEYS)
        type_name = entry.get("type")
        if not isinstance(type_name, str) or catalog.resolve(type_name) is None:
            errors.add(f"{where}.type", f"unknown GPU type {type_name!r}; accepted: a catalog "
                       "id, family or alias (gpu-extender catalog lists them)")
        elif len(catalog.resolve(type_name) or ()) > 1:
            errors.add(f"{where}.type", f"{type_name!r} names several types "
                       f"({catalog.describe(catalog.resolve(type_name) or ())}); an instance "
                       "type carries one: name its id")
        count = entry.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            errors.add(f"{where}.count", f"must be a whole number >= 1, got {count!r}")
        key = normalize_name(str(name))
        previous = seen.get(key)
        if previous is not None and previous[1] != (type_name, count):
            errors.add(where, f"conflicts with {path}[{previous[0]}]: both name instance type "
                       f"{key!r} with different GPUs")
        seen[key] = (str(name), (type_name, count))


def validate_flyte(errors: Errors, value: object, label_key: re.Pattern[str]) -> None:
    path = "nodeLabels.flyte"
    if not errors.mapping(path, value):
        return
    assert isinstance(value, dict)
    errors.unknown_keys(path, value, FLYTE_KEYS)
    for key in FLYTE_KEYS:
        item = value.get(key)
        if not isinstance(item, str) or not label_key.match(item):
            errors.add(f"{path}.{key}", f"must be a label key, got {item!r}")
    if value.get("deviceNodeLabel") == value.get("partitionSizeNodeLabel"):
        errors.add(f"{path}.partitionSizeNodeLabel",
                   "must differ from deviceNodeLabel (flytepropeller writes both)")


def validate_foreign_forms(errors: Errors, value: object) -> None:
    path = "foreignForms"
    if not errors.mapping(path, value):
        return
    assert isinstance(value, dict)
    errors.unknown_keys(path, value, FOREIGN_FORMS_KEYS)
    errors.boolean(f"{path}.hami", value.get("hami"))
    errors.boolean(f"{path}.kai", value.get("kai"))
    resources = value.get("vramResources")
    if not errors.sequence(f"{path}.vramResources", resources):
        return
    assert isinstance(resources, list)
    names: dict[str, int] = {}
    for i, entry in enumerate(resources):
        where = f"{path}.vramResources[{i}]"
        if not errors.mapping(where, entry):
            continue
        errors.unknown_keys(where, entry, VRAM_RESOURCE_KEYS)
        name = entry.get("name")
        if not isinstance(name, str) or not _RESOURCE_NAME.match(name):
            errors.add(f"{where}.name", f"must be an extended resource name like "
                       f"aliyun.com/gpu-mem, got {name!r}")
        elif name.startswith(("nvidia.com/", "gpu-extender.io/")):
            errors.add(f"{where}.name", f"{name} is already a GPU resource the extender reads")
        elif name in names:
            errors.add(f"{where}.name", f"duplicate of {path}.vramResources[{names[name]}]")
        else:
            names[name] = i
        unit = entry.get("unit")
        if not isinstance(unit, str) or unit not in VRAM_UNITS:
            errors.add(f"{where}.unit", f"unknown unit {shown(unit)}; accepted: "
                       + ", ".join(VRAM_UNITS))


# -- building ---------------------------------------------------------------------------------

def build_instance_types(overrides: Mapping[str, Any]) -> dict[str, InstanceTypeEntry]:
    merged = {normalize_name(name): InstanceTypeEntry(str(e["type"]), int(e["count"]))
              for name, e in shipped_instance_types().items()}
    for name, e in overrides.items():
        merged[normalize_name(str(name))] = InstanceTypeEntry(str(e["type"]), int(e["count"]))
    return merged


def build_flyte(raw: Mapping[str, Any]) -> FlyteLabels:
    return FlyteLabels(device_key=str(raw["deviceNodeLabel"]),
                       partition_key=str(raw["partitionSizeNodeLabel"]))


def build_foreign_forms(raw: Mapping[str, Any]) -> ForeignFormsConfig:
    return ForeignFormsConfig(
        hami=bool(raw["hami"]), kai=bool(raw["kai"]),
        vram_resources=tuple(VramResource(str(r["name"]), VRAM_UNITS[str(r["unit"])])
                             for r in raw["vramResources"]))
