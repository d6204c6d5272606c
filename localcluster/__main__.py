"""Run a local control plane for debugging.

    python -m localcluster up                                   # etcd + kube-apiserver
    python -m localcluster up --scheduler-config FILE           # ... + kube-scheduler

Prints the admin kubeconfig path (use it with kubectl or the Python client); Ctrl-C stops all.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from pathlib import Path

from localcluster.cluster import LocalCluster


def _up(scheduler_config: Path | None, keep_dir: bool) -> int:
    stop_requested = threading.Event()
    # SIGTERM (e.g. from `timeout` or a service manager) should clean up like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
    with LocalCluster(scheduler_config=scheduler_config, keep_dir=keep_dir) as cluster:
        print(
            f"control plane up in {cluster.startup_seconds:.1f}s; work dir {cluster.workdir}",
            file=sys.stderr,
        )
        print(f"apiserver {cluster.apiserver_url}", file=sys.stderr)
        print(f"export KUBECONFIG={cluster.kubeconfig('admin')}", file=sys.stderr)
        print("Ctrl-C to stop", file=sys.stderr)
        print(cluster.kubeconfig("admin"), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop_requested.wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the control plane until Ctrl-C")
    up.add_argument(
        "--scheduler-config",
        type=Path,
        help="KubeSchedulerConfiguration to run kube-scheduler with (default: none)",
    )
    up.add_argument("--keep-dir", action="store_true", help="keep logs and state after exit")
    args = parser.parse_args(argv)
    return _up(args.scheduler_config, args.keep_dir)


if __name__ == "__main__":
    sys.exit(main())
