"""Sub-commands beyond check-config. Each module named here has ``register(subparsers)``;
importing lazily keeps ``check-config`` free of Flask and the simulator."""

from __future__ import annotations

COMMAND_MODULES: tuple[str, ...] = (
    "extender.server.serve",
    "extender.simulator.command",
    "extender.whatif.command",
    "extender.whatif.explain_command",
    "extender.shadow.command",
    "extender.views.command",
    "extender.agent.command",
    "extender.webhook.command",
)
