"""``gpu-extender simulate --cluster-file ... --pods ...``: argument checks, then ``what_if``.

Every input is checked before any replay: the policies, the cluster file, every manifest (all
problems listed at once). Exit 2 on bad input, like the trace replay."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from extender.core.scoring.registry import strategy_names
from extender.errors import ConfigError, ExtenderError
from extender.runtime.exits import EXIT_USAGE

EXIT_INPUT = EXIT_USAGE  # an input file that is not what its flag expects
TRACE_ONLY = ("nodes", "fleet")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``simulate`` as the simulator defines it, with ``--cluster-file`` routed here: the
    simulator itself stays offline (it never builds the HTTP service the what-if drives)."""
    from extender.simulator import command as trace_command

    trace_command.register(subparsers)
    parser = subparsers.choices["simulate"]
    replay_trace = parser.get_default("run")

    def run(args: argparse.Namespace) -> int:
        if args.cluster_file:
            return run_what_if(args)
        return int(replay_trace(args))

    parser.set_defaults(run=run)


def run_what_if(args: argparse.Namespace) -> int:
    from extender.platform import load_platform
    from extender.sync.offline import load_cluster_file
    from extender.whatif.manifests import load_pod_manifests
    from extender.whatif.replay import render, stderr_progress, what_if

    clash = [f"--{name}" for name in TRACE_ONLY if getattr(args, name, None)]
    if clash:
        return _fail(f"--cluster-file replays pod manifests: drop {', '.join(clash)}")
    if not args.pods:
        return _fail("--cluster-file needs --pods: a pod manifest file or a directory of them")
    try:
        platform = load_platform(getattr(args, "config", None))
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    names = strategy_names()
    policies = [p.strip() for p in (args.policy or platform.config.scoring.strategy).split(",")
                if p.strip()]
    unknown = [p for p in policies if p not in names]
    if unknown or not policies:
        return _fail(f"--policy {args.policy!r}: {', '.join(unknown) or 'empty'} is not a "
                     f"registered strategy; accepted: {', '.join(names)}")
    try:
        objects = load_cluster_file(args.cluster_file)
        pods = load_pod_manifests(args.pods)
    except ExtenderError as exc:
        return _fail(str(exc))
    if not objects.nodes:
        return _fail(f"--cluster-file {args.cluster_file}: holds no Node (dump nodes and pods: "
                     "`kubectl get nodes,pods -A -o json`)")
    print(f"replaying {len(pods)} pods on {len(objects.nodes)} nodes under "
          f"{', '.join(policies)} ...", file=sys.stderr, flush=True)
    progress = stderr_progress() if len(pods) * len(policies) >= 200 else None
    runs = what_if(platform, objects, pods, policies, progress=progress)
    print(render(runs, source=f"{len(objects.nodes)} nodes of {args.cluster_file}"))
    if args.output:
        document = {"schema": 1, "clusterFile": str(args.cluster_file),
                    "pods": str(args.pods), "policies": [r.to_json() for r in runs]}
        try:
            Path(args.output).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            return _fail(f"cannot write {args.output}: {exc.strerror}")
        print(f"  result written to {args.output}")
    return 0


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT
