"""Defaulted, validated raw agent config -> typed ``AgentConfig`` (performs no validation)."""

from __future__ import annotations

from typing import Any

from extender.config.agent.types import AgentConfig, OverusePolicy, TimeSlicingConfig


def build_agent(raw: dict[str, Any]) -> AgentConfig:
    slicing = raw.get("timeSlicing")
    return AgentConfig(
        platform_config=raw["platformConfig"],
        overuse_policy=OverusePolicy(raw["overusePolicy"]),
        overuse_tolerance_mib=int(raw["overuseToleranceMiB"]),
        interval_s=float(raw["intervalSeconds"]),
        metrics_port=int(raw["metricsPort"]),
        metrics_host=str(raw["metricsHost"]),
        time_slicing=None if slicing is None else TimeSlicingConfig(
            replicas=int(slicing["replicas"]) if int(slicing["replicas"]) > 1 else 0,
            resource=str(slicing["resource"])),
    )
