"""``gpu-extender simulate``: replay a trace (or a generated workload) under one policy.

Usage::

    gpu-extender simulate --nodes NODES.csv --pods PODS.csv [--policy NAME] [--seed N]
                          [--inflate 1.3] [--tie-break order|random] [--output result.json]
    gpu-extender simulate [--synthetic-nodes 64] ...     # no trace files: a seeded openb-like
                                                         # workload (extender.simulator.synthetic)
    gpu-extender simulate --fleet node_info_df.csv ...   # the typed, priced fleet scenario

The what-if on your own cluster is its own command now: ``gpu-extender what-if --cluster-file
cluster.json --pods DIR|FILE`` (``extender.whatif``); ``simulate --cluster-file`` says so.

Input problems (a missing file, a missing column, a bad number, an unknown policy) print one
``error:`` line naming the file, line, column and value, and exit with status 2.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, TextIO

from extender.core.scoring.registry import strategy_names
from extender.errors import ExtenderError
from extender.runtime.exits import EXIT_USAGE
from extender.simulator.fleet import FleetOptions, fleet_scenario
from extender.simulator.replay import TIE_BREAKS, Replay, ReplayOptions
from extender.simulator.result import summary, write_json
from extender.simulator.scenario import Scenario, openb_scenario
from extender.simulator.synthetic import synthetic_trace
from extender.simulator.trace import load_trace

EXIT_INPUT = EXIT_USAGE  # an input file that is not what its flag expects


def _inflate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or value > 10:
        raise argparse.ArgumentTypeError(f"must be between 0 and 10, got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "simulate", help="replay a trace through the placement core and measure it",
        description="Replay an openb-format trace (FGD, ATC'23 method) through the same "
                    "inventory, fit, score and assign code the service runs.")
    source = parser.add_argument_group("workload (trace files, the fleet, or generated)")
    source.add_argument("--nodes", help="openb node list CSV (sn,cpu_milli,memory_mib,gpu,"
                                        "model)")
    source.add_argument("--pods", help="openb pod list CSV (name,cpu_milli,memory_mib,"
                                       "num_gpu,gpu_milli[,gpu_spec,...])")
    source.add_argument("--cluster-file", metavar="FILE", help=argparse.SUPPRESS)
    source.add_argument("--fleet", metavar="NODE_INFO_CSV",
                        help="typed, priced fleet scenario on this node list "
                             "(alibaba spot-gpu node_info_df.csv) with a generated workload")
    source.add_argument("--fleet-protection", choices=("on", "off"), default="on",
                        help="fleet only: keep untyped pods off protected types (default on)")
    source.add_argument("--synthetic-nodes", type=_count, default=64, metavar="N",
                        help="without trace files: nodes of the generated cluster (default 64)")
    source.add_argument("--synthetic-typed", type=_fraction, default=0.0, metavar="F",
                        help="without trace files: share of GPU pods with a gpu_spec")
    parser.add_argument("--policy", help="scoring strategy (default: the service default); "
                                         f"one of {', '.join(strategy_names())}")
    parser.add_argument("--seed", type=_count, default=42, help="random seed (default 42)")
    parser.add_argument("--inflate", type=_inflate, default=1.3,
                        help="append resampled pods until GPU demand reaches this x capacity "
                             "(default 1.3; 0 keeps the trace as is)")
    parser.add_argument("--tie-break", choices=TIE_BREAKS, default="order",
                        help="equal scores: first node in the seeded node order (the FGD "
                             "simulator, default) or random")
    parser.add_argument("--output", help="write the result as JSON to this file")
    parser.add_argument("--no-progress", action="store_true",
                        help="do not report progress on stderr (a long trace takes minutes)")
    parser.set_defaults(run=run)


def scenario_from_args(args: Any) -> Scenario:
    """The scenario the arguments describe; raises ``ExtenderError`` on bad input."""
    if args.fleet:
        if args.nodes or args.pods:
            raise ExtenderError("--fleet generates its workload: drop --nodes/--pods")
        return fleet_scenario(args.fleet, FleetOptions(seed=args.seed,
                                                       protect=args.fleet_protection == "on"))
    if bool(args.nodes) != bool(args.pods):
        given, missing = ("--nodes", "--pods") if args.nodes else ("--pods", "--nodes")
        raise ExtenderError(f"{given} needs {missing} too (or give neither for a generated "
                            "workload)")
    if args.nodes:
        trace = load_trace(args.nodes, args.pods)
        return openb_scenario(trace, pods_source=args.pods, nodes_source=args.nodes)
    if args.synthetic_nodes < 1:
        raise ExtenderError("--synthetic-nodes must be >= 1")
    return openb_scenario(synthetic_trace(args.seed, nodes=args.synthetic_nodes,
                                          typed=args.synthetic_typed))


class Progress:
    """Arrivals replayed so far, on stderr: one updating line on a terminal, a line per 10 %
    elsewhere (a CI log)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        if self._tty:
            end = "\n" if done >= total else ""
            self._stream.write(f"\rsimulate: {done:,} / {total:,} pods ({percent} %){end}")
        elif percent // 10 > self._shown // 10 or done >= total:
            self._stream.write(f"simulate: {done:,} / {total:,} pods ({percent} %)\n")
        else:
            return
        self._shown = percent
        self._stream.flush()


def run(args: argparse.Namespace) -> int:
    if args.cluster_file:
        print(f"error: the what-if on a cluster dump is its own command now: gpu-extender "
              f"what-if --cluster-file {args.cluster_file} --pods {args.pods or 'MANIFESTS'} "
              "(simulate replays traces only)", file=sys.stderr)
        return EXIT_INPUT
    names = strategy_names()
    if args.policy is not None and args.policy not in names:
        print(f"error: --policy {args.policy!r} is not a registered strategy; accepted: "
              f"{', '.join(names)}", file=sys.stderr)
        return EXIT_INPUT
    try:
        scenario = scenario_from_args(args)
        result = Replay(scenario, ReplayOptions(policy=args.policy, seed=args.seed,
                                                inflate=args.inflate,
                                                tie_break=args.tie_break)).run(
            None if args.no_progress else Progress(sys.stderr))
    except ExtenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print(summary(result))
    if args.output:
        try:
            write_json(result, args.output)
        except OSError as exc:
            print(f"error: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return EXIT_INPUT
        print(f"  result written to {args.output}")
    return 0



