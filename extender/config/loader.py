"""YAML -> defaults -> validation -> frozen ``PlatformConfig``.

``load_config`` raises ``ConfigError`` carrying every problem; nothing half-valid escapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from extender.config.admission import build_admission
from extender.config.build import build_accelerator
from extender.config.defaults import apply_defaults, effective_accelerators
from extender.config.demand import build_demand
from extender.config.handoff import build_handoff
from extender.config.platforms import (
    build_flyte,
    build_foreign_forms,
    build_instance_types,
)
from extender.config.score_cut import build_score_cut
from extender.config.types import (
    LabelMapping,
    NodeLabelConfig,
    PlatformConfig,
    ProtectionConfig,
    ScoringConfig,
    ServiceConfig,
)
from extender.config.validation import StrategyCatalogue, validate_config
from extender.errors import ConfigError, FieldError, yaml_problem


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    """Parse YAML text; an empty document is an empty config."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([FieldError("(file)", f"not valid YAML: {yaml_problem(exc)}")],
                          source) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError([FieldError("(file)", f"must be a mapping, got {type(data).__name__}")],
                          source)
    return data


def load_config_text(text: str, *, source: str = "config",
                     strategies: StrategyCatalogue = ()) -> PlatformConfig:
    raw = apply_defaults(parse_yaml(text, source))
    errors = validate_config(raw, strategies)
    if errors:
        raise ConfigError(errors, source)
    return build_config(raw)


def load_config(path: str | Path | None = None, *,
                strategies: StrategyCatalogue = ()) -> PlatformConfig:
    """Load ``path``, or the defaults when ``path`` is ``None``."""
    if path is None:
        return load_config_text("", source="(defaults)", strategies=strategies)
    return load_config_text(read_config_text(path), source=str(path), strategies=strategies)


def read_config_text(path: str | Path) -> str:
    """A config file's text; ``ConfigError`` (field ``(file)``) when unreadable or not UTF-8
    (the platform config and the agent's read alike)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([FieldError("(file)", f"cannot read: {exc.strerror}")], str(path)) \
            from exc
    except UnicodeDecodeError as exc:
        raise ConfigError([FieldError("(file)", f"not a UTF-8 text file ({exc.reason} at "
                                                f"byte {exc.start})")], str(path)) from exc


def build_config(raw: dict[str, Any]) -> PlatformConfig:
    """Typed config from a defaulted, validated raw tree (performs no validation)."""
    labels = raw["nodeLabels"]
    protection = raw["protection"]
    scoring = raw["scoring"]
    service = raw["service"]
    protected = protection["protectedTypes"]
    return PlatformConfig(
        accelerators=tuple(build_accelerator(e) for _, e in
                           effective_accelerators(raw["accelerators"])),
        node_labels=NodeLabelConfig(
            presets=tuple(labels["presets"]),
            custom=tuple(LabelMapping(key=m["key"], values=dict(m.get("values", {})))
                         for m in labels["custom"]),
            instance_types=build_instance_types(labels["instanceTypes"]),
            flyte=build_flyte(labels["flyte"]),
        ),
        protection=ProtectionConfig(
            protected_types=None if protected is None else tuple(protected),
            namespaces={ns: tuple(names) for ns, names in protection["namespaces"].items()},
        ),
        scoring=ScoringConfig(strategy=scoring["strategy"],
                              weights={k: float(v) for k, v in scoring["weights"].items()},
                              score_ahead=bool(scoring["scoreAhead"])),
        service=ServiceConfig(
            reservation_ttl_seconds=float(service["reservationTTLSeconds"]),
            reconcile_interval_seconds=float(service["reconcileIntervalSeconds"]),
            check_cpu_memory=bool(service["checkCpuMemory"]),
            placement_events=bool(service["placementEvents"]),
            event_qps=float(service["eventQPS"]),
            event_burst=int(service["eventBurst"]),
            gpu_series=bool(service["gpuSeries"]),
        ),
        admission=build_admission(raw["admission"]),
        foreign_forms=build_foreign_forms(raw["foreignForms"]),
        handoff=build_handoff(raw["handoff"]),
        demand=build_demand(raw["demand"]),
        score_cut=build_score_cut(raw["scoreCut"]),
    )
