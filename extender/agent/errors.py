"""The agent's error hierarchy: one base, one subclass per edge it validates."""

from __future__ import annotations

from extender.errors import ExtenderError


class AgentError(ExtenderError):
    """Anything the agent cannot do; the message names the input, the value and what is
    accepted."""


class FixtureError(AgentError):
    """An NVML fixture file that does not follow docs/agent-fixture.md."""


class PodResourcesError(AgentError):
    """The kubelet's PodResources API could not be read."""
