"""The JSON Schema of the platform config, for the chart's ``values.schema.json``.

helm checks values against the chart's schema before it renders anything, so a typo inside
``platform:`` fails ``helm install`` with its path instead of a CrashLoopBackOff whose log holds
``check-config``'s errors. The schema is generated, never written by hand:

- the structure and the types come from ``extender/config/default.yaml`` (every field at its
  default), each fixed mapping closed (``additionalProperties: false``);
- the parts whose keys are the user's (instance types, namespaces, weights, label maps) and the
  list entries come from the validators' own key lists and enums (presets, strategies, units);
- descriptions are default.yaml's comments.

The schema is necessary, not sufficient: cross-field rules (a GPU type that must be in the
catalog, a weight the chosen strategy declares) stay with ``check-config``, which the extender
runs at start. ``python -m extender.views.platform_schema --write`` refreshes the chart's file;
tests/deploy checks that it is current.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from extender.config.admission.types import SHARE_KINDS, WORKLOAD_MODES
from extender.config.admission.validation import GPU_TYPE_KEYS, TOLERATION_KEYS
from extender.config.defaults import API_VERSION, KIND
from extender.config.demand.validation import CLASSES, MAX_GPUS_PER_NODE, MODES
from extender.config.platforms import INSTANCE_TYPE_KEYS, VRAM_RESOURCE_KEYS, VRAM_UNITS
from extender.config.presets import PRESETS
from extender.config.score_cut.types import SET_DEPENDENT_PLUGINS
from extender.config.score_cut.validation import (
    MAX_EXTENDER_WEIGHT,
    MAX_IN_TREE_SCORE,
    MAX_PLUGIN_WEIGHT,
)
from extender.config.validation import ACCELERATOR_KEYS, MIG_KEYS, PROFILE_KEYS
from extender.core.scoring.registry import strategy_names

JSON = dict[str, Any]
CHART_SCHEMA = Path(__file__).parents[2] / "charts" / "gpu-extender" / "values.schema.json"

_STRING: JSON = {"type": "string", "minLength": 1}
_STRINGS: JSON = {"type": "array", "items": _STRING}
_COMMENT = re.compile(r"^(\s*)([A-Za-z][\w.-]*):.*?\s#\s?(.*)$")


def _closed(properties: Mapping[str, JSON], required: Sequence[str] = (),
            description: str = "") -> JSON:
    out: JSON = {"type": "object", "properties": dict(properties), "additionalProperties": False}
    if required:
        out["required"] = list(required)
    if description:
        out["description"] = description
    return out


def _entries(keys: Sequence[str], types: Mapping[str, JSON], required: Sequence[str]) -> JSON:
    """A list entry whose keys are a validator's key list (every key typed below)."""
    return _closed({key: types[key] for key in keys}, required)


def _overrides() -> dict[str, JSON]:
    """Schemas for the paths whose shape default.yaml cannot show (user keys, list entries)."""
    integer = {"type": "integer", "minimum": 1}
    profile = _entries(PROFILE_KEYS, {"name": _STRING, "memoryMiB": integer, "slices": integer,
                                      "starts": {"type": "array", "items": {"type": "integer",
                                                                            "minimum": 0}}},
                       ("name",))
    accelerator = _entries(ACCELERATOR_KEYS, {
        "id": _STRING, "family": _STRING, "memoryMiB": integer,
        "price": {"type": "number", "minimum": 0}, "protected": {"type": "boolean"},
        "aliases": _STRINGS,
        "mig": _entries(MIG_KEYS, {"slots": integer,
                                   "profiles": {"type": "array", "items": profile}}, ()),
    }, ("id",))
    toleration = _entries(TOLERATION_KEYS, {
        "key": {"type": "string"}, "operator": {"enum": ["Equal", "Exists"]},
        "value": {"type": "string"},
        "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
        "tolerationSeconds": {"type": "integer"}}, ())
    gpu_type = _entries(GPU_TYPE_KEYS, {
        "name": _STRING, "nodeSelector": {"type": "object", "additionalProperties":
                                          {"type": "string"}},
        "tolerations": {"type": "array", "items": toleration}}, ("name",))
    return {
        "accelerators": {"type": "array", "items": accelerator},
        "nodeLabels.presets": {"type": "array", "items": {"enum": sorted(PRESETS)}},
        "nodeLabels.custom": {"type": "array", "items": _closed(
            {"key": _STRING, "values": {"type": "object",
                                        "additionalProperties": {"type": "string"}}},
            ("key",))},
        "nodeLabels.instanceTypes": {"type": "object", "additionalProperties": _entries(
            INSTANCE_TYPE_KEYS, {"type": _STRING, "count": integer}, INSTANCE_TYPE_KEYS)},
        "protection.protectedTypes": {"type": ["array", "null"], "items": _STRING},
        "protection.namespaces": {"type": "object", "additionalProperties": _STRINGS},
        "service.reservationTTLSeconds": {"type": "number", "exclusiveMinimum": 0},
        "service.reconcileIntervalSeconds": {"type": "number", "exclusiveMinimum": 0},
        "service.eventQPS": {"type": "number", "minimum": 0},
        "service.eventBurst": {"type": "integer", "minimum": 1},
        "scoring.strategy": {"enum": strategy_names()},
        "scoring.weights": {"type": "object", "additionalProperties": {"type": "number"}},
        "admission.workloads": {"enum": list(WORKLOAD_MODES)},
        "admission.platformMapping.typeLabel": {"type": ["string", "null"]},
        "admission.platformMapping.gpuTypes": {"type": "array", "items": gpu_type},
        "admission.platformMapping.partitions.label": {"type": ["string", "null"]},
        "admission.visibleDevices.kinds": {"type": "array", "items": {"enum": list(SHARE_KINDS)}},
        "demand.mode": {"enum": list(MODES)},
        "demand.types": {"type": ["array", "null"], "items": _STRING},
        "demand.debounceSeconds": {"type": "number", "minimum": 0},
        "demand.cooldownSeconds": {"type": "number", "minimum": 0},
        "demand.provisioningClass": {"enum": list(CLASSES)},
        "demand.namespace": {"type": ["string", "null"]},
        "demand.gpusPerNode": {"type": "integer", "minimum": 1, "maximum": MAX_GPUS_PER_NODE},
        "demand.gpusPerNodeByType": {"type": "object", "additionalProperties": {
            "type": "integer", "minimum": 1, "maximum": MAX_GPUS_PER_NODE}},
        "scoreCut.extenderWeight": {"type": "integer", "minimum": 1,
                                    "maximum": MAX_EXTENDER_WEIGHT},
        "scoreCut.inTreeScoreMax": {"type": "integer", "minimum": 0,
                                    "maximum": MAX_IN_TREE_SCORE},
        "scoreCut.nodeLocalScoreMax": {"type": "integer", "minimum": 0,
                                       "maximum": MAX_IN_TREE_SCORE},
        **{f"scoreCut.setDependentWeights.{plugin}": {
            "type": "integer", "minimum": 0, "maximum": MAX_PLUGIN_WEIGHT}
           for plugin in SET_DEPENDENT_PLUGINS},
        "foreignForms.vramResources": {"type": "array", "items": _entries(
            VRAM_RESOURCE_KEYS, {"name": _STRING, "unit": {"enum": list(VRAM_UNITS)}},
            VRAM_RESOURCE_KEYS)},
    }


def _descriptions(text: str) -> dict[str, str]:
    """Dotted path -> the trailing comment of its line in default.yaml."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        key_match = re.match(r"^(\s*)([A-Za-z][\w.-]*):", line)
        if key_match is None or line.lstrip().startswith("#"):
            continue
        indent = len(key_match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key_match.group(2)))
        comment = _COMMENT.match(line)
        if comment is not None:
            out[".".join(k for _, k in stack)] = comment.group(3).strip()
    return out


def _infer(path: str, value: object, overrides: Mapping[str, JSON],
           notes: Mapping[str, str]) -> JSON:
    if path in overrides:
        schema = dict(overrides[path])
    elif isinstance(value, dict):
        schema = _closed({key: _infer(f"{path}.{key}" if path else key, item, overrides, notes)
                          for key, item in value.items()})
    elif isinstance(value, bool):
        schema = {"type": "boolean"}
    elif isinstance(value, int):
        schema = {"type": "integer", "minimum": 0}
    elif isinstance(value, float):
        schema = {"type": "number", "minimum": 0}
    elif isinstance(value, str):
        schema = _STRING
    elif isinstance(value, list):
        schema = _STRINGS
    else:
        schema = {}
    if path in notes:
        schema = {**schema, "description": notes[path]}
    return schema


def platform_schema() -> JSON:
    """The schema of the chart's ``platform`` value."""
    text = resources.files("extender.config").joinpath("default.yaml").read_text()
    tree = yaml.safe_load(text)
    schema = _infer("", tree, _overrides(), _descriptions(text))
    schema["properties"]["apiVersion"] = {"const": API_VERSION}
    schema["properties"]["kind"] = {"const": KIND}
    schema["required"] = ["apiVersion", "kind"]
    schema["description"] = ("The platform config (extender/config/default.yaml), generated by "
                             "extender/views/platform_schema.py; check-config checks the rest.")
    return schema


def chart_schema_with_platform(chart: JSON) -> JSON:
    """The chart's schema with its ``platform`` property replaced by the generated one."""
    return {**chart, "properties": {**chart["properties"], "platform": platform_schema()}}


def main(argv: Sequence[str]) -> int:
    chart = json.loads(CHART_SCHEMA.read_text())
    updated = chart_schema_with_platform(chart)
    text = json.dumps(updated, indent=2) + "\n"
    if "--write" in argv:
        CHART_SCHEMA.write_text(text)
        print(f"wrote {CHART_SCHEMA}")
    else:
        sys.stdout.write(json.dumps(platform_schema(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
