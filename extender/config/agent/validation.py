"""Validation of the defaulted agent config: every problem with its field path, the value and
what is accepted (the platform config's collector, so both read alike)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.config.agent.types import OverusePolicy
from extender.config.validation import _Errors
from extender.errors import FieldError, join_accepted
from extender.model import RESOURCE_GPU, RESOURCE_GPU_SHARED

AGENT_KEYS = ("platformConfig", "overusePolicy", "overuseToleranceMiB", "intervalSeconds",
              "metricsPort", "metricsHost", "timeSlicing")
TIME_SLICING_KEYS = ("replicas", "resource")
REPLICA_RESOURCES = (RESOURCE_GPU, RESOURCE_GPU_SHARED)


def validate_agent(raw: Mapping[str, Any]) -> list[FieldError]:
    errors = _Errors()
    errors.unknown_keys("", raw, AGENT_KEYS)
    platform = raw.get("platformConfig")
    if platform is not None:
        errors.string("platformConfig", platform)
    policy = raw.get("overusePolicy")
    if policy not in {p.value for p in OverusePolicy}:
        errors.add("overusePolicy", f"{policy!r}; accepted: "
                                    f"{join_accepted([p.value for p in OverusePolicy])}")
    errors.integer("overuseToleranceMiB", raw.get("overuseToleranceMiB"), minimum=0,
                   maximum=1 << 31)
    errors.number("intervalSeconds", raw.get("intervalSeconds"), minimum=0, exclusive=True)
    errors.integer("metricsPort", raw.get("metricsPort"), minimum=0, maximum=65535)
    errors.string("metricsHost", raw.get("metricsHost"))
    if "timeSlicing" in raw and errors.mapping("timeSlicing", raw["timeSlicing"]):
        slicing = raw["timeSlicing"]
        errors.unknown_keys("timeSlicing", slicing, TIME_SLICING_KEYS)
        errors.integer("timeSlicing.replicas", slicing.get("replicas"), minimum=0,
                       maximum=1024)
        if slicing.get("resource") not in REPLICA_RESOURCES:
            errors.add("timeSlicing.resource", f"{slicing.get('resource')!r}; accepted: "
                                               f"{join_accepted(REPLICA_RESOURCES)}")
    return errors.items
