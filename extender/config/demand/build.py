"""Defaulted, validated raw ``demand:`` tree -> typed ``DemandConfig``."""

from __future__ import annotations

from typing import Any

from extender.config.demand.types import DemandConfig, DemandMode, ProvisioningClass


def build_demand(raw: dict[str, Any]) -> DemandConfig:
    types = raw["types"]
    return DemandConfig(
        mode=DemandMode(raw["mode"]),
        types=None if types is None else tuple(str(t) for t in types),
        debounce_seconds=float(raw["debounceSeconds"]),
        cooldown_seconds=float(raw["cooldownSeconds"]),
        provisioning_class=ProvisioningClass(raw["provisioningClass"]),
        namespace=raw["namespace"],
        priority_class_name=str(raw["priorityClassName"]),
        gpus_per_node=int(raw["gpusPerNode"]),
        gpus_per_node_by_type={str(k): int(v) for k, v in raw["gpusPerNodeByType"].items()},
        image=str(raw["image"]),
    )
