"""``gpu-extender demand``: the autoscaler bridge controller.

    gpu-extender demand [--kubeconfig F] [--config F] [--mode utility-pods|provisioning-request]
                        [--debounce-seconds S] [--cooldown-seconds S] [--namespace NS]
                        [--scheduler-name NAME ...] [--interval S] [--leader-namespace NS]
                        [--monitoring-address HOST:PORT]
    gpu-extender demand --once [--dry-run] [-o text|json|yaml] ...

Running, it watches nodes and pods, reconciles every ``--interval`` while it holds the Lease
``gpu-extender-demand`` and serves ``/healthz``, ``/readyz``, ``/metrics``. ``--once``: one
pass, then exit (with ``--dry-run``: print the objects it would create, write nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import orjson

from extender.config.admission import AdmissionConfig
from extender.config.demand import DemandConfig, DemandMode
from extender.config.demand.validation import MODES
from extender.runtime.command import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    add_common_flags,
    configure_logging,
    fail,
    kube_or_exit,
    platform_or_exit,
    positive_seconds,
    run_until_signal,
)

DEFAULT_PORT = 8893
LEASE_NAME = "gpu-extender-demand"


def non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from exc
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError("must be a number of seconds >= 0")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "demand", help="turn GPU pods that fit nowhere into demand autoscalers act on",
        description="Watch pods of the extender's scheduler that fit no node now (judged on "
                    "the extender's own core), pack their GPU needs first-fit-decreasing into "
                    "whole GPUs of the types they accept (by the VRAM nodes of each type "
                    "report), and ask for those nodes with lowest-priority utility pods or "
                    "ProvisioningRequests; delete them once the nodes exist or the pods bound "
                    "(docs/autoscaling.md). Serves /healthz, /readyz, /metrics.")
    parser.add_argument("--mode", choices=MODES,
                        help="overrides demand.mode (default: the config's, utility-pods)")
    parser.add_argument("--debounce-seconds", type=non_negative_seconds, metavar="S",
                        help="overrides demand.debounceSeconds")
    parser.add_argument("--cooldown-seconds", type=non_negative_seconds, metavar="S",
                        help="overrides demand.cooldownSeconds")
    parser.add_argument("--namespace", metavar="NS",
                        help="where demand objects live (overrides demand.namespace; "
                             "default: --leader-namespace, else $POD_NAMESPACE, else the "
                             "service account's, else default)")
    parser.add_argument("--scheduler-name", action="append", metavar="NAME",
                        help="a scheduler name whose pods may need demand (repeatable; "
                             "default: admission.schedulerName.name, gpu-scheduler, or "
                             "default-scheduler where schedulerName.enabled is false); the "
                             "first also runs the utility pods")
    parser.add_argument("--interval", type=positive_seconds, default=5.0, metavar="S",
                        help="seconds between reconcile passes (default: 5)")
    parser.add_argument("--leader-namespace", metavar="NS",
                        help="namespace of the Lease gpu-extender-demand (default: the demand "
                             "namespace)")
    parser.add_argument("--once", action="store_true",
                        help="list once, reconcile once, print what was done, exit (takes "
                             "no Lease: beside a running controller, prefer --dry-run)")
    parser.add_argument("--dry-run", action="store_true",
                        help="with --once: write nothing; print the objects it would create")
    parser.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text",
                        help="--once: the report as text (default), JSON or YAML (with "
                             "--dry-run, JSON adds the objects it would create and YAML is "
                             "only those objects)")
    parser.add_argument("--monitoring-address", metavar="HOST:PORT",
                        default=f"127.0.0.1:{DEFAULT_PORT}",
                        help="serve /healthz, /readyz, /metrics there (default: "
                             f"127.0.0.1:{DEFAULT_PORT})")
    add_common_flags(parser, kube=True)
    parser.set_defaults(run=run)


def default_schedulers(admission: AdmissionConfig) -> list[str]:
    """The GPU profile's name (``admission.schedulerName.name``), or ``default-scheduler``
    where the extender runs behind the default scheduler (``schedulerName.enabled: false``)."""
    name = admission.scheduler_name
    return [name.name] if name.enabled else ["default-scheduler"]


def effective_config(config: DemandConfig, args: argparse.Namespace) -> DemandConfig:
    """The config's ``demand:`` with the flags that override it."""
    changes: dict[str, Any] = {}
    if args.mode:
        changes["mode"] = DemandMode(args.mode)
    if args.debounce_seconds is not None:
        changes["debounce_seconds"] = args.debounce_seconds
    if args.cooldown_seconds is not None:
        changes["cooldown_seconds"] = args.cooldown_seconds
    if args.namespace:
        changes["namespace"] = args.namespace
    return dataclasses.replace(config, **changes)


def run(args: argparse.Namespace) -> int:
    from extender.apiserver.client import ApiServerClient
    from extender.apiserver.demand_objects import ApiServerDemandObjects
    from extender.runtime.namespace import own_namespace

    if args.dry_run and not args.once:
        raise fail("error: --dry-run needs --once (the running controller always writes)",
                   EXIT_USAGE)
    configure_logging(args)
    platform = platform_or_exit(args.config)
    config = effective_config(platform.config.demand, args)
    namespace = config.namespace or args.leader_namespace or own_namespace()
    schedulers = args.scheduler_name or default_schedulers(platform.config.admission)
    configuration = kube_or_exit(args.kubeconfig)
    api = ApiServerClient.from_configuration(configuration)
    objects = ApiServerDemandObjects.from_configuration(configuration)
    leader = None
    if not args.once:
        from extender.apiserver.leases import ApiServerLeases
        from extender.sync.leader import LeaderLease

        leader = LeaderLease(ApiServerLeases.from_configuration(configuration),
                             args.leader_namespace or namespace, name=LEASE_NAME)
    from extender.demand.service import DemandService

    service = DemandService(platform, config, api, objects, namespace=namespace,
                            schedulers=schedulers, scheduler_name=schedulers[0],
                            interval_s=args.interval, leader=leader)
    if args.once:
        return run_once(service, args)
    return run_loop(service, args)


def run_once(service: Any, args: argparse.Namespace) -> int:
    from extender.apiserver.errors import KubeError
    from extender.demand.service import report_json

    try:
        report = service.once(dry_run=args.dry_run)
    except KubeError as exc:
        raise fail(f"error: {exc}") from exc
    if args.dry_run and args.output == "yaml":  # what would be created, kubectl-appliable
        print(_dump([dict(o.body) for o in report.wanted], "yaml"), end="")
    elif args.output != "text":
        print(_dump(report_json(report), args.output), end="")
    else:
        print(render(report_json(report)))
        if args.dry_run and report.wanted:
            print("---")
            print(_dump([dict(o.body) for o in report.wanted], "yaml"), end="")
    return EXIT_ERROR if report.errors else EXIT_OK


def _dump(document: object, output: str) -> str:
    if output == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
    import yaml

    if isinstance(document, list):
        return yaml.safe_dump_all(document, sort_keys=False)
    return yaml.safe_dump(document, sort_keys=False)


def render(report: dict[str, Any]) -> str:
    """``--once``'s text: pods by outcome, the plan, what was (or would be) done."""
    lines = [f"demand{' (dry run)' if report['dryRun'] else ''}: "
             f"{len(report['plan'])} node(s) planned for "
             f"{sum(len(n['pods']) for n in report['plan'])} pod(s)"]
    for pod in report["pods"]:
        why = f" ({pod['why']})" if pod.get("why") else ""
        lines.append(f"  pod {pod['pod']}: {pod['waiting']}{why}")
    for node in report["plan"]:
        lines.append(f"  node {node['type']} x{node['gpusPerNode']} GPU(s), "
                     f"{node['gpusUsed']} used: {', '.join(node['pods'])}")
    for item in report["unserved"]:
        lines.append(f"  unserved {item['pod']}: {item['why']}")
    verb = "would " if report["dryRun"] else ""
    for action in report["actions"]:
        lines.append(f"  {verb}{action['action']} {action['kind']} {action['name']}")
    for error in report["errors"]:
        lines.append(f"  error: {error}")
    return "\n".join(lines)


def run_loop(service: Any, args: argparse.Namespace) -> int:
    from extender.demand.service import DemandService
    from extender.errors import ConfigError
    from extender.runtime.listener import SideListener, parse_address

    assert isinstance(service, DemandService)
    flag = "--monitoring-address"
    try:
        host, port = parse_address(args.monitoring_address, flag, "gpu-extender demand")
    except ConfigError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    try:
        listener = SideListener(service.routes(), host, port, name="demand-monitor")
    except OSError as exc:
        raise fail(f"error: {flag} {args.monitoring_address}: cannot listen "
                   f"({exc.strerror})", EXIT_USAGE) from exc
    return run_until_signal(service, listener,
                            started=f"demand: metrics at http://{host}:{listener.port}/metrics")
