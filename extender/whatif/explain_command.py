"""``gpu-extender explain NAMESPACE/POD`` (and ``kubectl gpu explain``): argument checks, the
source (the cluster through kubeconfig, a dump, or a running extender), then the summary.
Exit codes as in ``runtime.exits``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from extender.errors import ConfigError, ExtenderError
from extender.runtime.command import EXIT_ERROR, configure_workstation_logging, error, fail
from extender.runtime.kubectl import add_output_flag, add_source_flags, emit, source_conflict

if TYPE_CHECKING:
    from extender.sync.offline import ClusterObjects


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain", help="where a pod is, or why it waits, with the runner-up and the terms",
        description="Judge one pod as kube-scheduler with the extender would: its filters "
                    "(node selector and affinity, taints, cordon and NotReady, resources, "
                    "host ports), then the extender's choice against the runner-up, term by "
                    "term. Reads the cluster (kubeconfig; read-only), a dump "
                    "(--cluster-file), or a running extender's /debug/explain (--url). "
                    "Exit 0 (explained), 1 (failure: no such pod, no cluster), 2 (usage).")
    parser.add_argument("pod", metavar="NAMESPACE/POD")
    add_source_flags(parser, url_help="a running extender, e.g. http://127.0.0.1:8888 "
                                      "(needs its debug endpoints)")
    parser.add_argument("--config", metavar="FILE",
                        help="platform config (or the chart's values file) to judge with; "
                             "not used with --url")
    add_output_flag(parser, ("text", "json", "yaml"), "text")
    parser.set_defaults(run=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    from extender.whatif.explain import local_report, remote_report, render_report
    from extender.whatif.inputs import load_whatif_config

    configure_workstation_logging()

    namespace, _, name = str(args.pod).partition("/")
    if not namespace or not name or "/" in name:
        raise error(f"{args.pod!r}: expected NAMESPACE/POD (e.g. ml/train-0)")
    conflict = source_conflict(args)
    if conflict:
        raise error(conflict)
    if args.url and args.config:
        raise error("--config judges locally; --url asks the extender, which runs its own")
    try:
        if args.url:
            doc = remote_report(args.url, namespace, name)
        else:
            config = load_whatif_config(args.config)
            cluster, source = _cluster(args)
            doc = local_report(config, cluster, namespace, name, source=source)
    except ConfigError as exc:
        raise fail(exc) from exc
    except ExtenderError as exc:
        raise error(exc, EXIT_ERROR) from exc
    return emit(doc, args.format, lambda: render_report(doc))


def _cluster(args: argparse.Namespace) -> tuple[ClusterObjects, str]:
    from extender.runtime.kubectl import read_cluster_file
    from extender.sync.offline import ClusterObjects

    if args.cluster_file:
        return read_cluster_file(args.cluster_file), f"the dump {args.cluster_file}"
    from extender.apiserver.client import ApiServerClient, load_configuration
    from extender.runtime.kubectl import kube_flags_problem
    from extender.whatif.explain import ExplainError

    problem = kube_flags_problem(args.kubeconfig, args.context)
    if problem:
        raise ExplainError(problem)
    api = ApiServerClient.from_configuration(load_configuration(args.kubeconfig, args.context))
    nodes, pods = api.list_objects("nodes").items, api.list_objects("pods").items
    where = f"context {args.context}" if args.context else "the kubeconfig's cluster"
    return ClusterObjects(list(nodes), list(pods)), where

