"""Validation of the defaulted raw config tree: returns *every* problem with its field path.

Paths read like the YAML: ``accelerators[3].price``, ``protection.namespaces.research[1]``.
Shipped catalog entries that a user did not touch are reported as ``catalog[<id>]`` (they are
valid unless a user entry collides with them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from itertools import pairwise
from typing import Any

from extender.catalog import AcceleratorType, Catalog, normalize_name
from extender.config.admission import validate_admission
from extender.config.build import build_accelerator
from extender.config.defaults import API_VERSION, KIND, effective_accelerators
from extender.config.demand import validate_demand
from extender.config.handoff import validate_handoff
from extender.config.platforms import (
    validate_flyte,
    validate_foreign_forms,
    validate_instance_types,
)
from extender.config.presets import LABEL_VALUE_RULE, PRESETS, is_label_value
from extender.config.score_cut import validate_score_cut
from extender.config.types import Weight
from extender.errors import FieldError, did_you_mean, join_accepted

TOP_LEVEL_KEYS = ("apiVersion", "kind", "accelerators", "nodeLabels", "protection", "scoring",
                  "service", "admission", "foreignForms", "handoff", "demand",
                  "scoreCut")
ACCELERATOR_KEYS = ("id", "family", "memoryMiB", "price", "protected", "aliases", "mig")
MIG_KEYS = ("slots", "profiles")
PROFILE_KEYS = ("name", "memoryMiB", "slices", "starts")
SERVICE_KEYS = ("reservationTTLSeconds", "reconcileIntervalSeconds", "checkCpuMemory",
                "placementEvents", "eventQPS", "eventBurst", "gpuSeries")

_ID = re.compile(r"^(?=.{1,63}$)[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
"""A type id or family: pods name it in the ``gpu-extender.io/accelerator`` label, so a label
value (63 characters at most)."""
_ID_RULE = "a lower-case id ([a-z0-9.-], at most 63 characters)"
_PROFILE = re.compile(r"^[1-9][0-9]*g\.[1-9][0-9]*gb$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class _Errors:
    """Collects FieldErrors; small typed checks that say what is accepted."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(FieldError(path, message))

    def unknown_keys(self, path: str, value: Mapping[str, Any], accepted: Collection[str]) -> None:
        for key in value:
            if key not in accepted:
                where = f"{path}.{key}" if path else str(key)
                self.add(where, f"unknown field; accepted: {join_accepted(accepted)}")

    def mapping(self, path: str, value: object) -> bool:
        if isinstance(value, dict):
            return True
        self.add(path, f"must be a mapping, got {type(value).__name__} {value!r}")
        return False

    def sequence(self, path: str, value: object) -> bool:
        if isinstance(value, list):
            return True
        self.add(path, f"must be a list, got {type(value).__name__} {value!r}")
        return False

    def number(self, path: str, value: object, *, minimum: float, exclusive: bool = False) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                not math.isfinite(value):  # YAML's .nan / .inf are floats too
            self.add(path, f"must be a number, got {value!r}")
            return False
        if value < minimum or (exclusive and value == minimum):
            bound = f"> {minimum}" if exclusive else f">= {minimum}"
            self.add(path, f"must be {bound}, got {value!r}")
            return False
        return True

    def integer(self, path: str, value: object, *, minimum: int,
                maximum: int | None = None) -> bool:
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(path, f"must be an integer, got {value!r}")
            return False
        if value < minimum or (maximum is not None and value > maximum):
            span = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
            self.add(path, f"must be {span}, got {value!r}")
            return False
        return True

    def boolean(self, path: str, value: object) -> bool:
        if isinstance(value, bool):
            return True
        self.add(path, f"must be true or false, got {value!r}")
        return False

    def string(self, path: str, value: object, pattern: re.Pattern[str] | None = None,
               what: str = "") -> bool:
        if not isinstance(value, str) or not value:
            self.add(path, f"must be a non-empty string, got {value!r}")
            return False
        if pattern is not None and not pattern.match(value):
            self.add(path, f"{value!r} is not {what}")
            return False
        return True


def validate_config(raw: Mapping[str, Any], strategies: StrategyCatalogue = ()
                    ) -> list[FieldError]:
    """Every problem in a defaulted raw config; empty means valid.

    ``strategies``: the registered scoring strategies, name -> declared weights (checked
    when given; ``scoring.weights`` keys are checked against the chosen strategy's).
    """
    errors = _Errors()
    errors.unknown_keys("", raw, TOP_LEVEL_KEYS)
    if raw.get("apiVersion") != API_VERSION:
        errors.add("apiVersion", f"must be {API_VERSION!r}, got {raw.get('apiVersion')!r}")
    if raw.get("kind") != KIND:
        errors.add("kind", f"must be {KIND!r}, got {raw.get('kind')!r}")
    catalog = _validate_accelerators(errors, raw.get("accelerators"))
    _validate_node_labels(errors, raw.get("nodeLabels"), catalog)
    _validate_protection(errors, raw.get("protection"), catalog)
    _validate_scoring(errors, raw.get("scoring"), strategies)
    _validate_service(errors, raw.get("service"))
    validate_admission(errors, raw.get("admission"), catalog, raw.get("nodeLabels"))
    validate_foreign_forms(errors, raw.get("foreignForms"))
    validate_handoff(errors, raw.get("handoff"), _LABEL_KEY)
    validate_demand(errors, raw.get("demand"), catalog)
    validate_score_cut(errors, raw.get("scoreCut"))
    return errors.items


def _validate_accelerators(errors: _Errors, user: object) -> Catalog:
    """Check every entry; returns a catalog of the entries that are valid (for name checks)."""
    if not errors.sequence("accelerators", user):
        user = []
    assert isinstance(user, list)
    first_use: dict[str, int] = {}
    for i, entry in enumerate(user):
        if not isinstance(entry, dict):
            errors.add(f"accelerators[{i}]", f"must be a mapping, got {entry!r}")
        elif "id" not in entry:
            # Without an id it is neither an override nor a new type: judge nothing else.
            errors.add(f"accelerators[{i}].id", "is required")
        elif isinstance(entry["id"], str):
            if entry["id"] in first_use:
                errors.add(f"accelerators[{i}].id",
                           f"duplicate id {entry['id']!r} (also accelerators"
                           f"[{first_use[entry['id']]}]); name each type once")
            first_use.setdefault(entry["id"], i)

    valid = []
    names_only = []  # invalid entries whose names are usable, so references to them do not
    #                  cascade into "unknown GPU type" errors elsewhere
    owner: dict[str, tuple[str, str]] = {}  # normalized name -> (path, type id)
    families: dict[str, str] = {}
    for path, entry in effective_accelerators(user):
        if "id" not in entry:
            continue
        if not _validate_accelerator(errors, path, entry):
            placeholder = _names_of(entry)
            if placeholder is not None:
                names_only.append(placeholder)
            continue
        type_id = entry["id"]
        families.setdefault(normalize_name(entry["family"]), type_id)
        for j, name in enumerate([type_id, *entry.get("aliases", [])]):
            key = normalize_name(name)
            where = f"{path}.id" if j == 0 else f"{path}.aliases[{j - 1}]"
            if key in owner and owner[key][1] != type_id:
                errors.add(where, f"{name!r} already names type {owner[key][1]!r} "
                                  f"({owner[key][0]}); names must be unique")
            owner[key] = (where, type_id)
        valid.append(build_accelerator(entry))
    family_of = {t.id: normalize_name(t.family) for t in valid}
    for family, first_member in families.items():
        if family in owner and family_of.get(owner[family][1]) != family:
            errors.add(owner[family][0], f"{family!r} is also the family of {first_member!r}; "
                                         "a name may not mean one type and another's family")
    return Catalog(valid + names_only)


def _names_of(entry: dict[str, Any]) -> AcceleratorType | None:
    """The names an invalid entry would define (for lookups only), if its id is usable."""
    type_id = entry.get("id")
    if not isinstance(type_id, str) or not _ID.match(type_id):
        return None
    family = entry.get("family")
    aliases = entry.get("aliases")
    return AcceleratorType(
        id=type_id,
        family=family if isinstance(family, str) and _ID.match(family) else type_id,
        memory_mib=0, price=0.0, protected=False,
        aliases=tuple(a for a in aliases if isinstance(a, str)) if isinstance(aliases, list)
        else (),
    )


def _validate_accelerator(errors: _Errors, path: str, entry: dict[str, Any]) -> bool:
    before = len(errors.items)
    errors.unknown_keys(path, entry, ACCELERATOR_KEYS)
    for key in ("id", "family", "memoryMiB", "price", "protected"):
        if key not in entry:
            errors.add(f"{path}.{key}", "is required")
    if "id" in entry:
        errors.string(f"{path}.id", entry["id"], _ID, _ID_RULE)
    if "family" in entry:
        errors.string(f"{path}.family", entry["family"], _ID, _ID_RULE)
    if "memoryMiB" in entry:
        errors.integer(f"{path}.memoryMiB", entry["memoryMiB"], minimum=1)
    if "price" in entry:
        errors.number(f"{path}.price", entry["price"], minimum=0)
    if "protected" in entry:
        errors.boolean(f"{path}.protected", entry["protected"])
    aliases = entry.get("aliases", [])
    if errors.sequence(f"{path}.aliases", aliases):
        for j, alias in enumerate(aliases):
            errors.string(f"{path}.aliases[{j}]", alias)
    if entry.get("mig") is not None:
        memory = entry.get("memoryMiB") if isinstance(entry.get("memoryMiB"), int) else None
        _validate_mig(errors, f"{path}.mig", entry["mig"], memory)
    return len(errors.items) == before


def _validate_mig(errors: _Errors, path: str, mig: object, memory_mib: int | None) -> None:
    if not errors.mapping(path, mig):
        return
    assert isinstance(mig, dict)
    errors.unknown_keys(path, mig, MIG_KEYS)
    slots = mig.get("slots")
    if not errors.integer(f"{path}.slots", slots, minimum=1, maximum=8):
        slots = None
    profiles = mig.get("profiles", [])
    if not errors.sequence(f"{path}.profiles", profiles):
        return
    seen: set[str] = set()
    for k, profile in enumerate(profiles):
        where = f"{path}.profiles[{k}]"
        if not errors.mapping(where, profile):
            continue
        errors.unknown_keys(where, profile, PROFILE_KEYS)
        name = profile.get("name")
        if errors.string(f"{where}.name", name, _PROFILE, "a MIG profile name like 1g.10gb"):
            if name in seen:
                errors.add(f"{where}.name", f"duplicate profile {name!r}")
            seen.add(name)
        if errors.integer(f"{where}.memoryMiB", profile.get("memoryMiB"), minimum=1) and (
            memory_mib is not None and profile["memoryMiB"] > memory_mib
        ):
            errors.add(f"{where}.memoryMiB",
                       f"{profile['memoryMiB']} exceeds the GPU's memoryMiB {memory_mib}")
        slices = profile.get("slices")
        if not errors.integer(f"{where}.slices", slices, minimum=1, maximum=8):
            slices = None
        starts = profile.get("starts")
        if errors.sequence(f"{where}.starts", starts):
            assert isinstance(starts, list)
            if not starts:
                errors.add(f"{where}.starts", "must list at least one start slot")
            placed: list[tuple[int, int]] = []  # (start, position in the list)
            for s, start in enumerate(starts):
                if not errors.integer(f"{where}.starts[{s}]", start, minimum=0, maximum=7):
                    continue
                if slots is not None and slices is not None and start + slices > slots:
                    errors.add(f"{where}.starts[{s}]",
                               f"start {start} + {slices} slices exceeds the {slots} slots")
                placed.append((start, s))
            # Two instances of one profile at its listed starts must fit side by side
            # (NVML placements never overlap): start_i + slices <= start_(i+1) once sorted.
            placed.sort()
            for (before, b), (start, s) in pairwise(placed):
                if slices is not None and before + slices > start:
                    errors.add(f"{where}.starts[{s}]",
                               f"start {start} overlaps the instance at start {before} "
                               f"(starts[{b}], {slices} slices); starts of one profile are "
                               f"at least {slices} apart")


def _check_type_name(errors: _Errors, path: str, name: object, catalog: Catalog,
                     allow_star: bool = False) -> None:
    if allow_star and name == "*":
        return
    if not errors.string(path, name):
        return
    assert isinstance(name, str)
    if catalog.resolve(name) is None:
        accepted = catalog.accepted_names() + (["*"] if allow_star else [])
        hint = did_you_mean(name, accepted) or ";"
        errors.add(path, f"unknown GPU type {name!r}{hint} accepted: {join_accepted(accepted)}")


def _validate_node_labels(errors: _Errors, labels: object, catalog: Catalog) -> None:
    if not errors.mapping("nodeLabels", labels):
        return
    assert isinstance(labels, dict)
    errors.unknown_keys("nodeLabels", labels, ("presets", "custom", "instanceTypes", "flyte"))
    validate_instance_types(errors, labels.get("instanceTypes"), catalog)
    validate_flyte(errors, labels.get("flyte"), _LABEL_KEY)
    presets = labels.get("presets")
    if errors.sequence("nodeLabels.presets", presets):
        assert isinstance(presets, list)
        for i, preset in enumerate(presets):
            if not isinstance(preset, str) or preset not in PRESETS:
                errors.add(f"nodeLabels.presets[{i}]",
                           f"unknown preset {preset!r}; accepted: {join_accepted(PRESETS)}")
    custom = labels.get("custom")
    if not errors.sequence("nodeLabels.custom", custom):
        return
    assert isinstance(custom, list)
    for i, mapping in enumerate(custom):
        where = f"nodeLabels.custom[{i}]"
        if not errors.mapping(where, mapping):
            continue
        errors.unknown_keys(where, mapping, ("key", "values"))
        errors.string(f"{where}.key", mapping.get("key"), _LABEL_KEY, "a valid label key")
        values = mapping.get("values", {})
        if errors.mapping(f"{where}.values", values):
            for value, name in values.items():
                if not isinstance(value, str):
                    # YAML reads `1: t4` as an int key; label values are strings
                    errors.add(f"{where}.values[{value}]",
                               f"label value must be a string, got {type(value).__name__} "
                               f"{value!r}; quote it")
                    continue
                if not is_label_value(value):
                    errors.add(f"{where}.values[{value}]",
                               f"{value!r} can never be a node's label value "
                               f"({LABEL_VALUE_RULE}); write the value your nodes carry")
                    continue
                _check_type_name(errors, f"{where}.values[{value}]", name, catalog)


def _validate_protection(errors: _Errors, protection: object, catalog: Catalog) -> None:
    if not errors.mapping("protection", protection):
        return
    assert isinstance(protection, dict)
    errors.unknown_keys("protection", protection, ("protectedTypes", "namespaces"))
    names = protection.get("protectedTypes")
    if names is not None and errors.sequence("protection.protectedTypes", names):
        assert isinstance(names, list)
        for i, name in enumerate(names):
            _check_type_name(errors, f"protection.protectedTypes[{i}]", name, catalog)
    namespaces = protection.get("namespaces")
    if not errors.mapping("protection.namespaces", namespaces):
        return
    assert isinstance(namespaces, dict)
    for namespace, allowed in namespaces.items():
        where = f"protection.namespaces.{namespace}"
        if errors.sequence(where, allowed):
            for i, name in enumerate(allowed):
                _check_type_name(errors, f"{where}[{i}]", name, catalog, allow_star=True)


StrategyCatalogue = Mapping[str, Mapping[str, Weight]] | Collection[str]
"""What validation knows of the strategies: name -> declared weights (weights are then
checked against the chosen strategy), or just the names (weights checked as numbers only)."""


def _validate_scoring(errors: _Errors, scoring: object, strategies: StrategyCatalogue) -> None:
    if not errors.mapping("scoring", scoring):
        return
    assert isinstance(scoring, dict)
    errors.unknown_keys("scoring", scoring, ("strategy", "weights", "scoreAhead"))
    errors.boolean("scoring.scoreAhead", scoring.get("scoreAhead"))
    strategy = scoring.get("strategy")
    known = errors.string("scoring.strategy", strategy)
    if known and strategies and strategy not in strategies:
        errors.add("scoring.strategy",
                   f"unknown strategy {strategy!r}; accepted: {join_accepted(strategies)}")
        known = False
    weights = scoring.get("weights")
    if not errors.mapping("scoring.weights", weights):
        return
    assert isinstance(weights, dict)
    if not (known and isinstance(strategies, Mapping)):
        for key, value in weights.items():
            errors.number(f"scoring.weights.{key}", value, minimum=0)
        return
    assert isinstance(strategy, str)
    declared: Mapping[str, Weight] = strategies[strategy]
    for key, value in weights.items():
        path = f"scoring.weights.{key}"
        weight = declared.get(key)
        if weight is None:
            accepted = join_accepted(declared) if declared else "none (it reads no weights)"
            errors.add(path, f"strategy {strategy!r} has no weight {key!r}; accepted weights: "
                             f"{accepted}")
        else:
            _check_weight(errors, path, value, weight)


def _check_weight(errors: _Errors, path: str, value: object, weight: Weight) -> None:
    if not errors.number(path, value, minimum=weight.low):
        return
    assert isinstance(value, int | float)
    if weight.flag and value not in (0, 1):
        errors.add(path, f"must be 0 or 1 ({weight.doc}), got {value!r}")
    elif value > weight.high:
        errors.add(path, f"must be <= {weight.high:g} ({weight.doc}), got {value!r}")


def _validate_service(errors: _Errors, service: object) -> None:
    if not errors.mapping("service", service):
        return
    assert isinstance(service, dict)
    errors.unknown_keys("service", service, SERVICE_KEYS)
    errors.number("service.reservationTTLSeconds", service.get("reservationTTLSeconds"),
                  minimum=0, exclusive=True)
    errors.number("service.reconcileIntervalSeconds", service.get("reconcileIntervalSeconds"),
                  minimum=0, exclusive=True)
    errors.boolean("service.checkCpuMemory", service.get("checkCpuMemory"))
    errors.boolean("service.placementEvents", service.get("placementEvents"))
    errors.number("service.eventQPS", service.get("eventQPS"), minimum=0)
    errors.integer("service.eventBurst", service.get("eventBurst"), minimum=1)
    errors.boolean("service.gpuSeries", service.get("gpuSeries"))
