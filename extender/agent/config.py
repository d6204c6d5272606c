"""The agent's config moved to ``extender.config.agent`` (types, defaults, validation, build,
issue 20); these names stay for the agent's modules and for branches in flight."""

from __future__ import annotations

from extender.agent.inventory import Sharing
from extender.config.agent import (
    AgentConfig,
    OverusePolicy,
    TimeSlicingConfig,
    load_agent_config,
    parse_agent_config,
)

__all__ = ["AgentConfig", "OverusePolicy", "TimeSlicingConfig", "load_agent_config",
           "parse_agent_config", "sharing_of"]


def sharing_of(config: AgentConfig) -> Sharing | None:
    """The config's time-slicing override as the inventory's ``Sharing`` (``None``: none)."""
    slicing = config.time_slicing
    return None if slicing is None else Sharing(slicing.replicas, slicing.resource)
