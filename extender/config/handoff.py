"""Config of the ``handoff:`` section (how a share's GPU reaches its containers): defaults,
validation with field paths and building, in one small module that ``defaults.py``,
``validation.py`` and ``loader.py`` only call in (as ``platforms.py``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from extender.config.platforms import Errors
from extender.config.presets import PRESETS
from extender.config.types import HandoffConfig, HandoffMode

HANDOFF_KEYS = ("default", "presets", "nodeLabel")
MODES = tuple(m.value for m in HandoffMode)


def apply_handoff_defaults(out: dict[str, Any]) -> None:
    handoff = out.setdefault("handoff", {})
    if isinstance(handoff, dict):
        defaults = HandoffConfig()
        handoff.setdefault("default", defaults.default.value)
        handoff.setdefault("presets", {k: v.value for k, v in defaults.presets.items()})
        handoff.setdefault("nodeLabel", defaults.node_label)


def validate_handoff(errors: Errors, value: object, label_key: re.Pattern[str]) -> None:
    path = "handoff"
    if not errors.mapping(path, value) or not isinstance(value, dict):
        return
    errors.unknown_keys(path, value, HANDOFF_KEYS)
    _mode(errors, f"{path}.default", value.get("default"))
    presets = value.get("presets")
    if errors.mapping(f"{path}.presets", presets):
        assert isinstance(presets, dict)
        for name, mode in presets.items():
            where = f"{path}.presets[{name}]"
            if name not in PRESETS:
                errors.add(where, f"unknown label preset {name!r}; accepted: "
                           + ", ".join(PRESETS))
            _mode(errors, where, mode)
    label = value.get("nodeLabel")
    if not isinstance(label, str) or not label_key.match(label):
        errors.add(f"{path}.nodeLabel", f"must be a label key, got {label!r}")


def _mode(errors: Errors, path: str, value: object) -> None:
    if value not in MODES:
        errors.add(path, f"unknown handoff {value!r}; accepted: {', '.join(MODES)}")


def build_handoff(raw: Mapping[str, Any]) -> HandoffConfig:
    return HandoffConfig(
        default=HandoffMode(raw["default"]),
        presets={str(k): HandoffMode(v) for k, v in raw["presets"].items()},
        node_label=str(raw["nodeLabel"]))
