"""Defaults of the ``demand:`` section, applied to the raw tree before validation."""

from __future__ import annotations

from typing import Any

from extender.config.demand.types import DemandConfig


def _defaults() -> dict[str, Any]:
    config = DemandConfig()
    return {
        "mode": config.mode.value,
        "types": None,
        "debounceSeconds": config.debounce_seconds,
        "cooldownSeconds": config.cooldown_seconds,
        "provisioningClass": config.provisioning_class.value,
        "namespace": None,
        "priorityClassName": config.priority_class_name,
        "gpusPerNode": config.gpus_per_node,
        "gpusPerNodeByType": {},
        "image": config.image,
    }


def apply_demand_defaults(raw: dict[str, Any]) -> None:
    """Fill ``raw["demand"]`` in place (a non-mapping is left for validation to report)."""
    demand = raw.setdefault("demand", {})
    if isinstance(demand, dict):
        for key, value in _defaults().items():
            demand.setdefault(key, value)
