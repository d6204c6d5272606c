"""Defaults of the agent config, applied to the raw tree before validation (the values of
``types.AgentConfig``, in the file's camelCase)."""

from __future__ import annotations

from typing import Any

from extender.model import RESOURCE_GPU

DEFAULTS: dict[str, Any] = {
    "platformConfig": None,
    "overusePolicy": "warn",
    "overuseToleranceMiB": 0,
    "intervalSeconds": 10,
    "metricsPort": 9401,
    "metricsHost": "0.0.0.0",
}
TIME_SLICING_DEFAULTS: dict[str, Any] = {"resource": RESOURCE_GPU}


def apply_agent_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """A new tree with every absent key defaulted (``timeSlicing`` stays absent when absent)."""
    out = {**DEFAULTS, **raw}
    slicing = out.get("timeSlicing")
    if isinstance(slicing, dict):
        out["timeSlicing"] = {**TIME_SLICING_DEFAULTS, **slicing}
    return out
