"""The command registry: command name -> its module, the dependency extra it needs and its
one-line help. ``extender.cli`` parses the command name first and imports only that command's
module, which has ``register(commands)`` (adds its parser, ``set_defaults(run=...)``); so
``--help`` and ``check-config`` import neither Flask nor the simulator. A module the command
needs but the installation lacks is reported with the extra to install (``pip install
'gpu-extender[serve]'``), never a traceback.

A new command is one entry here plus its module (``extender/runtime/command.py`` has the
shared flags and start-up).
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    module: str
    extra: str | None
    """The ``pyproject.toml`` extra with the command's dependencies (``None``: the core)."""
    help: str


COMMANDS: dict[str, Command] = {
    "check-config": Command("extender.cli", None, "validate a platform config file"),
    "serve": Command("extender.server.serve", "serve",
                     "run the scheduler extender (filter, prioritize, bind)"),
    "simulate": Command("extender.simulator.command", "sim",
                        "replay a trace through the placement core and measure it"),
    "what-if": Command("extender.whatif.command", "sim",
                       "replay pod manifests on a dump of your cluster, as kube-scheduler "
                       "with the extender would place them"),
    "explain": Command("extender.whatif.explain_command", "serve",
                       "where a pod is, or why it waits, with the runner-up and the terms"),
    "shadow": Command("extender.shadow.command", "serve",
                      "watch a cluster read-only and judge another scheduler's GPU placements"),
    "catalog": Command("extender.views.command", None,
                       "list the GPU types, aliases and MIG profiles pods may ask for"),
    "inspect": Command("extender.views.command", "serve",
                       "per-node, per-GPU table of what is allocated"),
    "agent": Command("extender.agent.command", "agent",
                     "NVML node agent: publish the node's GPUs, usage vs declared VRAM"),
    "webhook": Command("extender.webhook.command", "webhook",
                       "run the admission webhook (validate and mutate GPU pods)"),
    "demand": Command("extender.demand.command", "serve",
                      "turn GPU pods that fit nowhere into demand autoscalers act on "
                      "(utility pods, ProvisioningRequests)"),
    "webhook-certs": Command("extender.webhook.command", "webhook",
                             "create the webhook's CA and serving certificate (no cert-manager)"),
}
