"""``gpu-extender catalog`` and ``gpu-extender inspect``; ``kubectl-gpu`` runs them as a
kubectl plugin (``kubectl gpu inspect``, ``kubectl gpu catalog``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from extender.errors import ConfigError, ExtenderError
from extender.runtime.command import (
    EXIT_OK,
    EXIT_USAGE,
    configure_workstation_logging,
    platform_or_exit,
)
from extender.runtime.kubectl import add_output_flag, add_source_flags, source_conflict


class SourceError(ExtenderError):
    """The inventory cannot be read from the chosen source; the message says why."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    catalog = commands.add_parser(
        "catalog", help="list the GPU types, aliases and MIG profiles pods may ask for",
        description="Every GPU type of the effective platform config: id, family, aliases "
                    "(with the ecosystem each spelling comes from), memory, MIG profiles "
                    "(memory, slots, legal starts), price and protection.")
    catalog.add_argument("--type", metavar="NAME",
                         help="only the types this id, family or alias names (e.g. a100)")
    catalog.add_argument("--config", metavar="FILE", help="platform config YAML")
    add_output_flag(catalog, ("text", "json", "yaml"), "text", long_format=True)
    catalog.set_defaults(run=run_catalog)

    inspect = commands.add_parser(
        "inspect", help="what is allocated: one row per node (-d: per GPU)",
        description="The inventory, one row per node: status (Ready/NotReady, "
                    "SchedulingDisabled), GPU type, GPUs used/free, VRAM, MIG slots, "
                    "time-slice replicas, pods; -d per GPU: VRAM used/total, replicas, MIG "
                    "instances used/free by profile, pods, health. Reads a running extender "
                    "(--url), a `kubectl get nodes,pods -A -o json` dump (--cluster-file), or "
                    "the cluster itself (default: $KUBECONFIG or --kubeconfig; read-only). "
                    "Exit 0 (shown), 1 (failure), 2 (usage).")
    add_source_flags(inspect,
                     url_help="a running extender (serve), e.g. http://127.0.0.1:8888")
    inspect.add_argument("--node", metavar="NAME", help="only this node")
    inspect.add_argument("-l", "--selector", metavar="SELECTOR",
                         help="only nodes with these labels (a=b,c!=d,e,!f; not with --url)")
    inspect.add_argument("--type", metavar="NAME",
                         help="only nodes with GPUs of this type, family or alias (e.g. a100)")
    inspect.add_argument("-d", "--details", action="store_true",
                         help="per GPU: memory, replicas, MIG profiles, health, pods")
    inspect.add_argument("--config", metavar="FILE",
                         help="platform config YAML (not used with --url)")
    add_output_flag(inspect, ("text", "wide", "json", "yaml"), "text", long_format=True)
    inspect.set_defaults(run=run_inspect)


def run_catalog(args: argparse.Namespace) -> int:
    from extender.views.catalog import catalog_document, render_catalog

    platform = platform_or_exit(args.config)
    try:
        document = catalog_document(platform, args.type)
    except LookupError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return EXIT_USAGE
    _emit(document, args.format, render_catalog)
    return EXIT_OK


def run_inspect(args: argparse.Namespace) -> int:
    from extender.views.inspect import render_inventory
    from extender.views.summary import SelectorError, keep_nodes, parse_selector, render_summary

    configure_workstation_logging()

    conflict = source_conflict(args)
    if conflict:
        print(f"error: {conflict}", file=sys.stderr)
        return EXIT_USAGE
    if args.url and args.selector:
        print("error: -l needs the nodes' labels: use the cluster or --cluster-file, not --url",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        requirements = parse_selector(args.selector) if args.selector else []
        types = _types(args.type, args.config) if args.type else None
        report = _inventory_from(args)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    except (SelectorError, LookupError) as exc:
        print(f"error: {exc.args[0] if isinstance(exc, LookupError) else exc}",
              file=sys.stderr)
        return EXIT_USAGE
    except ExtenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.node and not report["nodes"] and not report.get("holdingsOnUnknownNodes"):
        print(f"error: --node {args.node!r}: no such node in the inventory", file=sys.stderr)
        return 1
    report = keep_nodes(report, requirements=requirements, types=types)
    if args.details:
        _emit(report, args.format, render_inventory)
    else:
        _emit(report, args.format,
              lambda r: render_summary(r, wide=args.format == "wide"))
    return 0


def _types(name: str, config: str | None) -> frozenset[str]:
    from extender.platform import load_platform
    from extender.views.catalog import catalog_document

    return frozenset(t["id"] for t in catalog_document(load_platform(config), name)["types"])


def _emit(document: dict[str, Any], output: str, render: Any) -> None:
    if output == "json":
        sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2
                                      | orjson.OPT_SORT_KEYS).decode() + "\n")
    elif output == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(document, sort_keys=True))
    else:
        print(render(document))


def _inventory_from(args: argparse.Namespace) -> dict[str, Any]:
    if args.url:
        return _fetch(args.url, args.node)
    from extender.inventory.report import inventory_report
    from extender.inventory.store import Inventory
    from extender.platform import load_platform
    from extender.sync.apply import InventoryApplier
    from extender.sync.dra import DraState
    from extender.views.summary import annotate

    platform = load_platform(args.config)
    api = None if args.cluster_file else _api(args)
    nodes, pods = _objects(args, api)
    dra = {} if api is None else _dra_objects(api)
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory, dra=DraState(platform.catalog))
    assert applier.dra is not None
    # slices before the nodes (merged as they are decoded), claims once the nodes are known
    applier.dra.replace_slices(dra.get("resourceslices", []))
    applier.dra.replace_classes(dra.get("deviceclasses", []))
    applier.replace_nodes(nodes)
    applier.dra.replace_claims(dra.get("resourceclaims", []))
    applier.replace_pods(pods)
    inventory.mark_synced()
    return annotate(inventory_report(inventory, args.node), nodes)


def _dra_objects(api: Any) -> dict[str, list[dict[str, Any]]]:
    """The DRA objects of a live cluster (docs/dra.md); none where the API server has no
    ``resource.k8s.io/v1`` (or we may not read it)."""
    from extender.apiserver.client import DRA_KINDS
    from extender.apiserver.errors import KubeError

    out: dict[str, list[dict[str, Any]]] = {}
    for kind in DRA_KINDS:
        try:
            out[kind] = api.list_objects(kind).items
        except KubeError:
            out[kind] = []
    return out


def _objects(args: argparse.Namespace, api: Any
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes and pods of the cluster file, else of the cluster (``api``)."""
    if api is None:
        from extender.runtime.kubectl import read_cluster_file

        objects = read_cluster_file(args.cluster_file)
        return objects.nodes, objects.pods
    return api.list_objects("nodes").items, api.list_objects("pods").items


def _api(args: argparse.Namespace) -> Any:
    """The cluster's client (``--kubeconfig``, ``--context``); ``SourceError`` naming the flag
    when one of them is wrong."""
    from extender.apiserver.client import ApiServerClient, load_configuration
    from extender.runtime.kubectl import kube_flags_problem

    problem = kube_flags_problem(args.kubeconfig, args.context)
    if problem:
        raise SourceError(problem)
    return ApiServerClient.from_configuration(load_configuration(args.kubeconfig, args.context))


def _fetch(url: str, node: str | None) -> dict[str, Any]:
    from extender.runtime.fetch import DEBUG_OFF, fetch_json

    document = fetch_json(url, "/debug/inventory", query={"node": node} if node else None,
                          missing=DEBUG_OFF + "; without --url inspect reads the cluster "
                                              "itself")
    if not isinstance(document, dict) or "nodes" not in document:
        raise SourceError(f"--url {url}: not a /debug/inventory document")
    return document
