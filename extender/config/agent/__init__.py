"""The node agent's config file (``gpu-extender agent --config``), in the platform config's
style: frozen ``types``, ``defaults`` applied to the raw tree, ``validation`` with field paths,
``build`` to the typed object, read by the platform config's loader (same ``(file)`` sentinel
and messages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extender.config.agent.build import build_agent
from extender.config.agent.defaults import apply_agent_defaults
from extender.config.agent.types import AgentConfig, OverusePolicy, TimeSlicingConfig
from extender.config.agent.validation import validate_agent
from extender.errors import ConfigError, FieldError

__all__ = ["AgentConfig", "OverusePolicy", "TimeSlicingConfig", "load_agent_config",
           "parse_agent_config"]


def parse_agent_config(doc: Any, source: str = "agent config") -> AgentConfig:
    """A parsed YAML document -> ``AgentConfig``; ``ConfigError`` with every problem."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError([FieldError("(file)", f"must be a mapping, got "
                                                f"{type(doc).__name__}")], source)
    raw = apply_agent_defaults(doc)
    errors = validate_agent(raw)
    if errors:
        raise ConfigError(errors, source)
    return build_agent(raw)


def load_agent_config(path: str | Path | None) -> AgentConfig:
    """``path`` read and checked, or the defaults for ``None``."""
    if path is None:
        return AgentConfig()
    from extender.config.loader import parse_yaml, read_config_text

    return parse_agent_config(parse_yaml(read_config_text(path), str(path)), str(path))
