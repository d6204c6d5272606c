"""``--config`` of the what-if and explain: a platform config file, or a Helm values file of
the chart, whose ``platform:`` is the platform config the extender will run with and whose
``managedResources`` say which extended resources kube-scheduler ignores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from extender.config.loader import load_config_text
from extender.core.scoring.registry import strategy_weights
from extender.errors import ConfigError, FieldError
from extender.platform import Platform, build_platform, load_platform, refuse_unmet_needs
from extender.scheduling.verdict import ignored_resources


@dataclass(frozen=True)
class WhatIfConfig:
    platform: Platform
    ignored: frozenset[str]
    """Extended resources kube-scheduler does not check (``ignoredByScheduler: true``)."""
    source: str
    """What was read: "(defaults)", the file, or "FILE (platform:)"."""


def load_whatif_config(path: str | None) -> WhatIfConfig:
    """Raises ``ConfigError`` naming the file and the field."""
    if path is None:
        platform = load_platform(None)
        return WhatIfConfig(platform, ignored_resources(), "(defaults)")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not a UTF-8 text file"
        raise ConfigError([FieldError("(file)", f"cannot read: {reason}")], path) from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        document = None  # the platform loader reports the YAML error with its position
    if not _is_values(document):
        platform = load_platform(path)
        return WhatIfConfig(platform, ignored_resources(), path)
    assert isinstance(document, dict)
    source = f"{path} (platform:)"
    config = load_config_text(yaml.safe_dump(document["platform"]), source=source,
                              strategies=strategy_weights())
    refuse_unmet_needs(config.scoring.strategy, frozenset(), source)
    platform = build_platform(config)
    managed = _ignored(document, path)
    return WhatIfConfig(platform, ignored_resources() if managed is None else managed, source)


def _is_values(document: object) -> bool:
    """A Helm values file: a mapping with a ``platform:`` mapping and no ``kind`` of its
    own (a platform config has ``kind: PlatformConfig`` or is plain fields)."""
    return isinstance(document, dict) and isinstance(document.get("platform"), dict) and \
        "kind" not in document


def _ignored(values: dict[str, object], path: str) -> frozenset[str] | None:
    """``managedResources`` marked ``ignoredByScheduler: true`` (``None``: no such key)."""
    managed = values.get("managedResources")
    if managed is None:
        return None
    if not isinstance(managed, list):
        raise ConfigError([FieldError("managedResources", f"must be a list, got "
                                                          f"{type(managed).__name__}")], path)
    return frozenset(str(m["name"]) for m in managed
                     if isinstance(m, dict) and m.get("ignoredByScheduler") is True
                     and "name" in m)
