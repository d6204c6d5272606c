"""Defaults of the ``admission:`` section, applied to the raw tree before validation."""

from __future__ import annotations

from typing import Any

from extender.config.admission.types import SHARE_KINDS


def _defaults() -> dict[str, Any]:
    return {
        "warnings": True,
        "workloads": "warn",
        "schedulerName": {"enabled": True, "name": "gpu-scheduler"},
        "platformMapping": {
            "enabled": True,
            "typeLabel": None,
            "gpuTypes": [],
            "partitions": {"enabled": True, "label": None, "tolerate": False},
        },
        "visibleDevices": {"enabled": True, "env": "NVIDIA_VISIBLE_DEVICES",
                           "kinds": list(SHARE_KINDS)},
        "runtimeClass": {"enabled": False, "name": "nvidia"},
    }


def _fill(target: dict[str, Any], defaults: dict[str, Any]) -> None:
    for key, value in defaults.items():
        if key not in target:
            target[key] = value
        elif isinstance(value, dict) and isinstance(target[key], dict):
            _fill(target[key], value)


def apply_admission_defaults(raw: dict[str, Any]) -> None:
    """Fill ``raw["admission"]`` in place (a non-mapping is left for validation to report)."""
    admission = raw.setdefault("admission", {})
    if isinstance(admission, dict):
        _fill(admission, _defaults())
