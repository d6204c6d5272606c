"""Validation of the defaulted ``demand:`` tree: every problem with its field path, the value
and what is accepted."""

from __future__ import annotations

import math
import re

from extender.catalog import Catalog
from extender.config.admission.validation import Checks
from extender.config.demand.types import DemandMode, ProvisioningClass
from extender.errors import join_accepted

DEMAND_KEYS = ("mode", "types", "debounceSeconds", "cooldownSeconds", "provisioningClass",
               "namespace", "priorityClassName", "gpusPerNode", "gpusPerNodeByType", "image")
MODES = tuple(m.value for m in DemandMode)
CLASSES = tuple(c.value for c in ProvisioningClass)
MAX_GPUS_PER_NODE = 16

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def validate_demand(errors: Checks, demand: object, catalog: Catalog) -> None:
    path = "demand"
    if not errors.mapping(path, demand):
        return
    assert isinstance(demand, dict)
    errors.unknown_keys(path, demand, DEMAND_KEYS)
    _choice(errors, f"{path}.mode", demand.get("mode"), MODES)
    _choice(errors, f"{path}.provisioningClass", demand.get("provisioningClass"), CLASSES)
    types = demand.get("types")
    if types is not None and errors.sequence(f"{path}.types", types):
        assert isinstance(types, list)
        for i, name in enumerate(types):
            if errors.string(f"{path}.types[{i}]", name) and catalog.resolve(str(name)) is None:
                errors.add(f"{path}.types[{i}]", f"unknown GPU type {name!r}; accepted: "
                                                 f"{join_accepted(catalog.accepted_names())}")
    for key in ("debounceSeconds", "cooldownSeconds"):
        _seconds(errors, f"{path}.{key}", demand.get(key))
    namespace = demand.get("namespace")
    if namespace is not None:
        errors.string(f"{path}.namespace", namespace, _DNS_LABEL, "a namespace name")
    errors.string(f"{path}.priorityClassName", demand.get("priorityClassName"), _DNS_SUBDOMAIN,
                  "a PriorityClass name (lower-case DNS subdomain)")
    errors.integer(f"{path}.gpusPerNode", demand.get("gpusPerNode"), minimum=1,
                   maximum=MAX_GPUS_PER_NODE)
    by_type = demand.get("gpusPerNodeByType")
    if errors.mapping(f"{path}.gpusPerNodeByType", by_type):
        assert isinstance(by_type, dict)
        known = [t.id for t in catalog.types]
        for name, count in by_type.items():
            where = f"{path}.gpusPerNodeByType[{name}]"
            if name not in known:
                errors.add(where, f"unknown GPU type id {name!r}; accepted: "
                                  f"{join_accepted(known)}")
            errors.integer(where, count, minimum=1, maximum=MAX_GPUS_PER_NODE)
    errors.string(f"{path}.image", demand.get("image"))


def _choice(errors: Checks, path: str, value: object, accepted: tuple[str, ...]) -> None:
    if value not in accepted:
        errors.add(path, f"must be one of {', '.join(accepted)}, got {value!r}")


def _seconds(errors: Checks, path: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < 0:
        errors.add(path, f"must be a number of seconds >= 0, got {value!r}")
