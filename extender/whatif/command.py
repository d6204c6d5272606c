"""``gpu-extender what-if --cluster-file DUMP --pods MANIFESTS``: argument checks, then
``what_if``, then the table (or JSON/YAML).

Every input is checked before any replay: the policies, the config, the cluster file, every
manifest (all problems listed at once). Exit codes as in ``runtime.exits``: 2 for a wrong
command line or input file, 1 for an invalid platform config or an unwritable ``--output``."""

from __future__ import annotations

import argparse
import sys

from extender.core.scoring.registry import strategy_names
from extender.errors import ConfigError, ExtenderError
from extender.runtime.command import EXIT_OK, configure_workstation_logging, error, fail
from extender.runtime.kubectl import add_output_flag, emit, read_cluster_file, terminal_width

FORMATS = ("table", "wide", "json", "yaml")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "what-if", help="replay pod manifests on a dump of your cluster, as kube-scheduler "
                        "with the extender would place them",
        description="Place pod manifests (Pods, Lists, Deployments, StatefulSets, Jobs, "
                    "CronJobs) one after the other on a `kubectl get nodes,pods -A -o json` "
                    "dump: kube-scheduler's own filters (node selector and affinity, taints, "
                    "cordon and NotReady, CPU/memory/pods/extended resources, host ports), "
                    "then the extender's choice, under one or more policies side by side. "
                    "Exit 0 (done, even when pods wait), 1 (failure), 2 (usage).")
    parser.add_argument("--cluster-file", metavar="FILE", required=True,
                        help="a `kubectl get nodes,pods -A -o json` dump (JSON or YAML)")
    parser.add_argument("--pods", metavar="PATH", required=True,
                        help="pod manifests: a file or a directory (YAML/JSON)")
    parser.add_argument("--config", metavar="FILE",
                        help="the platform config to run: a platform config file, or the "
                             "chart's Helm values file (its platform: and managedResources)")
    parser.add_argument("--policy", metavar="NAME", action="append",
                        help="scoring strategy; repeat it or separate with commas to compare "
                             f"side by side (default: the config's); one of "
                             f"{', '.join(strategy_names())}")
    add_output_flag(parser, FORMATS, "table")
    parser.add_argument("--output", metavar="FILE",
                        help="write the result (in the -o format) to FILE instead of stdout")
    parser.set_defaults(run=run_what_if)


def policies_of(values: list[str] | None, default: str) -> list[str]:
    chosen = [p.strip() for v in (values or [default]) for p in v.split(",") if p.strip()]
    return list(dict.fromkeys(chosen))


def run_what_if(args: argparse.Namespace) -> int:
    from extender.whatif.inputs import load_whatif_config
    from extender.whatif.manifests import KNOWN_KINDS, load_pod_manifests
    from extender.whatif.render import document, render
    from extender.whatif.replay import stderr_progress, what_if

    configure_workstation_logging()

    try:
        config = load_whatif_config(args.config)
    except ConfigError as exc:
        raise fail(exc) from exc
    names = strategy_names()
    policies = policies_of(args.policy, config.platform.config.scoring.strategy)
    unknown = [p for p in policies if p not in names]
    if unknown or not policies:
        raise error(f"--policy {','.join(args.policy or [])!r}: "
                    f"{', '.join(unknown) or 'empty'} is not a registered strategy; accepted: "
                    f"{', '.join(names)}")
    objects = read_cluster_file(args.cluster_file)
    unexpanded: list[str] = []
    try:
        pods = load_pod_manifests(args.pods, unexpanded=unexpanded)
    except ExtenderError as exc:
        raise error(exc) from exc
    if unexpanded:
        shown = ", ".join(unexpanded[:10]) + (f" and {len(unexpanded) - 10} more"
                                              if len(unexpanded) > 10 else "")
        print(f"note: not replayed: {shown}: the what-if expands only {KNOWN_KINDS}; give "
              "their pods as one of those (e.g. a Job with the same pod template)",
              file=sys.stderr, flush=True)
    if not objects.nodes:
        raise error(f"--cluster-file {args.cluster_file}: holds no Node (dump nodes and pods: "
                    "`kubectl get nodes,pods -A -o json`)")
    print(f"replaying {len(pods)} pods on {len(objects.nodes)} nodes under "
          f"{', '.join(policies)} with {config.source} ...", file=sys.stderr, flush=True)
    progress = stderr_progress() if len(pods) * len(policies) >= 200 else None
    runs = what_if(config.platform, objects, pods, policies, progress=progress,
                   ignored=config.ignored)
    source = f"{len(objects.nodes)} nodes of {args.cluster_file}"
    code = emit(document(runs, cluster_file=str(args.cluster_file), pods=str(args.pods)),
                args.format, lambda: render(runs, source=source, width=terminal_width(),
                                            wide=args.format == "wide"),
                output=args.output)
    return EXIT_OK if code == EXIT_OK else code
