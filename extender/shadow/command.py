"""``gpu-extender shadow``: run read-only next to the real scheduler, or print its report.

    gpu-extender shadow [--kubeconfig F] [--config F] [--port 8890] [--state-file F]
    gpu-extender shadow --report [--url http://127.0.0.1:8890 | --state-file F] [-o json]
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from extender.errors import ConfigError

DEFAULT_PORT = 8890
EXIT_USAGE = 2


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
    parser.add_argument("--config", metavar="FILE", help="platform config YAML")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig (default: in-cluster service account / $KUBECONFIG)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address of the report server (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port of the report server (default: {DEFAULT_PORT}; 0: any)")
    parser.add_argument("--log-level", default="info",
                        choices=("debug", "info", "warning", "error"))
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
        return 1
    if args.output == "json":
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render(report))
    return 0


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
        url = args.url.rstrip("/") + "/report"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                document = orjson.loads(response.read())
        except (urllib.error.URLError, OSError) as exc:
            raise ReportError(f"--url {args.url}: no shadow answers there ({exc}); "
                                    "start one with `gpu-extender shadow`") from exc
        except orjson.JSONDecodeError as exc:
            raise ReportError(f"--url {args.url}: not a shadow report ({exc})") from exc
    if not isinstance(document, dict) or "totals" not in document:
        raise ReportError("not a shadow report (no 'totals')")
    return document


def run_shadow(args: argparse.Namespace) -> int:
    from extender.apiserver.client import ApiServerClient, load_configuration
    from extender.apiserver.errors import KubeError
    from extender.platform import load_platform
    from extender.server import logs
    from extender.shadow.service import ReportServer, ShadowService

    logs.configure(args.log_level)
    try:
        platform = load_platform(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        configuration = load_configuration(args.kubeconfig)
    except KubeError as exc:
        print(exc, file=sys.stderr)
        return 1
    api = ApiServerClient.from_configuration(configuration)
    service = ShadowService(platform, api, state_file=args.state_file)
    try:
        server = ReportServer(service.ledger, args.host, args.port)
    except OSError as exc:
        print(f"error: --host {args.host} --port {args.port}: cannot listen ({exc.strerror})",
              file=sys.stderr)
        return EXIT_USAGE
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server.start()
    service.start()
    print(f"shadow: report at http://{args.host}:{server.port}/report", file=sys.stderr,
          flush=True)
    try:
        stop.wait()
    finally:
        service.stop()
        server.stop()
    return 0
