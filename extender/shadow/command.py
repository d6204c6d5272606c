"""``gpu-extender shadow``: run read-only next to the real scheduler, or print its report.

    gpu-extender shadow [--kubeconfig F] [--config F] [--port 8890] [--state-file F]
    gpu-extender shadow --report [--url http://127.0.0.1:8890 | --state-file F] [-o json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from extender.runtime.command import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    add_common_flags,
    configure_logging,
    error,
    kube_or_exit,
    platform_or_exit,
    run_until_signal,
)

DEFAULT_PORT = 8890


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "shadow", help="watch a cluster read-only and judge another scheduler's GPU placements",
        description="Watch nodes and pods with read-only rights; for every GPU pod another "
                    "scheduler binds, record where gpu-extender would have put it (node, GPUs, "
                    "score, or why it would wait) and whether the real placement broke a "
                    "per-GPU invariant. Serves GET /report, /metrics, /healthz, /readyz. With "
                    "--report, print the report of a running shadow instead.")
    parser.add_argument("--report", action="store_true",
                        help="print the report of a running shadow (from --url or "
                             "--state-file) and exit")
    parser.add_argument("--url", default=f"http://127.0.0.1:{DEFAULT_PORT}",
                        help=f"--report: the shadow's address (default: http://127.0.0.1:"
                             f"{DEFAULT_PORT})")
    parser.add_argument("--state-file", metavar="FILE",
                        help="running: also keep the report in this JSON file; --report: read "
                             "it from there instead of --url")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="--report: text (default) or the JSON report")
    # --host/--port: the report server's address (port 0: any free port)
    add_common_flags(parser, kube=True, listen=("127.0.0.1", DEFAULT_PORT))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.report:
        return print_report(args)
    return run_shadow(args)


def print_report(args: argparse.Namespace) -> int:
    from extender.shadow.ledger import render

    try:
        report = _fetch_report(args)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.output == "json":
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render(report))
    return EXIT_OK


class ReportError(Exception):
    pass


def _fetch_report(args: argparse.Namespace) -> dict[str, Any]:
    if args.state_file:
        path = Path(args.state_file)
        try:
            document = orjson.loads(path.read_bytes())
        except OSError as exc:
            raise ReportError(f"--state-file {path}: cannot read ({exc.strerror})") from exc
        except orjson.JSONDecodeError as exc:
            raise ReportError(f"--state-file {path}: not a shadow report ({exc})") from exc
    else:
        from extender.runtime.fetch import FetchError, fetch_json

        try:
            document = fetch_json(args.url, "/report", who="the shadow", timeout_s=10,
                                  missing=f"not a shadow (it serves /report on port "
                                          f"{DEFAULT_PORT})",
                                  unreachable="start one with `gpu-extender shadow`")
        except FetchError as exc:
            raise ReportError(str(exc)) from exc
    if not isinstance(document, dict) or "totals" not in document:
        raise ReportError("not a shadow report (no 'totals')")
    return document


def run_shadow(args: argparse.Namespace) -> int:
    from extender.apiserver.client import ApiServerClient
    from extender.shadow.service import ReportServer, ShadowService

    configure_logging(args)
    platform = platform_or_exit(args.config)
    api = ApiServerClient.from_configuration(kube_or_exit(args.kubeconfig))
    service = ShadowService(platform, api, state_file=args.state_file)
    try:
        server = ReportServer(service.ledger, args.host, args.port,
                              head_timeout_s=args.head_timeout)
    except OSError as exc:
        raise error(f"--host {args.host} --port {args.port}: cannot listen "
                    f"({exc.strerror})", EXIT_USAGE) from exc
    return run_until_signal(service, server,
                            started=f"shadow: report at http://{args.host}:{server.port}/report")
