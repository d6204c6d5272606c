"""Defaults, applied to the raw YAML tree before validation (scheduler-plugins style)."""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import yaml

from extender.config.admission import apply_admission_defaults
from extender.config.demand import apply_demand_defaults
from extender.config.handoff import apply_handoff_defaults
from extender.config.platforms import apply_platform_defaults
from extender.config.score_cut import apply_score_cut_defaults

API_VERSION = "gpu-extender.io/v1alpha1"
KIND = "PlatformConfig"

DEFAULT_PRESETS = ("gfd", "gke", "eks-karpenter", "aks", "flyte")
DEFAULT_STRATEGY = "cost-fragmentation"

DEFAULT_SERVICE: dict[str, Any] = {
    "reservationTTLSeconds": 30.0,
    "reconcileIntervalSeconds": 300.0,
    "checkCpuMemory": False,
    "placementEvents": True,
    "eventQPS": 20.0,
    "eventBurst": 30,
    "gpuSeries": True,
}


def shipped_accelerators() -> list[dict[str, Any]]:
    """The catalog shipped in the package, as raw entries."""
    text = resources.files("extender.catalog").joinpath("accelerators.yaml").read_text()
    data = yaml.safe_load(text)
    return list(data["accelerators"])


def apply_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``raw`` with every omitted section filled in.

    ``accelerators`` stays the user's list; ``effective_accelerators`` overlays it on the shipped
    catalog, keeping each entry's own field path for error messages.
    """
    out = copy.deepcopy(raw)
    out.setdefault("apiVersion", API_VERSION)
    out.setdefault("kind", KIND)
    out.setdefault("accelerators", [])
    labels = out.setdefault("nodeLabels", {})
    if isinstance(labels, dict):
        labels.setdefault("presets", list(DEFAULT_PRESETS))
        labels.setdefault("custom", [])
    protection = out.setdefault("protection", {})
    if isinstance(protection, dict):
        protection.setdefault("protectedTypes", None)
        protection.setdefault("namespaces", {})
    scoring = out.setdefault("scoring", {})
    if isinstance(scoring, dict):
        scoring.setdefault("strategy", DEFAULT_STRATEGY)
        scoring.setdefault("weights", {})
        scoring.setdefault("scoreAhead", True)
    service = out.setdefault("service", {})
    if isinstance(service, dict):
        for key, value in DEFAULT_SERVICE.items():
            service.setdefault(key, value)
    apply_admission_defaults(out)
    apply_platform_defaults(out)
    apply_handoff_defaults(out)
    apply_demand_defaults(out)
    apply_score_cut_defaults(out)
    return out


def effective_accelerators(user: object) -> list[tuple[str, dict[str, Any]]]:
    """The shipped catalog overlaid with the user's entries, each with the path to report.

    An entry whose ``id`` is shipped overrides only the fields it names (its path is the user's
    ``accelerators[i]``); a new id adds a type. Non-dict entries are skipped here; validation
    reports them.
    """
    merged: list[tuple[str, dict[str, Any]]] = [
        (f"catalog[{entry['id']}]", dict(entry)) for entry in shipped_accelerators()
    ]
    position = {entry["id"]: i for i, (_, entry) in enumerate(merged)}
    for i, entry in enumerate(user if isinstance(user, list) else []):
        if not isinstance(entry, dict):
            continue
        path = f"accelerators[{i}]"
        known = position.get(str(entry.get("id")))
        if known is None:
            merged.append((path, dict(entry)))
        else:
            merged[known] = (path, {**merged[known][1], **entry})
    return merged
