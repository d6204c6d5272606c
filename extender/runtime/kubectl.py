"""How the commands speak kubectl's language, in one place: the kube flags (``--kubeconfig``
for every command that talks to a cluster, and ``--context`` for those run from a
workstation; the workstation commands' choice of source, the cluster, ``--url`` or
``--cluster-file``, and what is wrong with the one chosen), ``-o`` formats and writing the
document, the terminal width (what-if, explain, inspect). Only argparse and YAML/JSON writers
at import (the rest lazily): importable from any command without loading the service.

How a command starts, fails and exits (the exit codes, ``fail``/``error``, config-or-exit,
signals) is ``runtime.command``'s job; the exit codes are ``runtime.exits``' (docs/cli.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from extender.runtime.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from extender.sync.offline import ClusterObjects

MIN_WIDTH, DEFAULT_WIDTH = 60, 100


def add_kube_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                   in_cluster: bool = False) -> None:
    """``--kubeconfig``; ``in_cluster``: a process that runs in the cluster (its service
    account first), else a workstation command, which also takes ``--context``."""
    if in_cluster:
        parser.add_argument("--kubeconfig", metavar="FILE",
                            help="kubeconfig to use instead of the in-cluster service account "
                                 "/ $KUBECONFIG")
        return
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig of the cluster (default: $KUBECONFIG, then "
                             "~/.kube/config)")
    parser.add_argument("--context", metavar="NAME",
                        help="the kubeconfig context to use (default: its current-context)")


def add_source_flags(parser: argparse.ArgumentParser, *, url_help: str) -> None:
    """Where a workstation command reads the cluster from, one source at a time
    (``source_conflict`` checks): the kubeconfig's cluster (the default; ``--kubeconfig``,
    ``--context``), a running extender (``--url``) or a dump (``--cluster-file``)."""
    source = parser.add_argument_group("source (default: the cluster of the kubeconfig)")
    add_kube_flags(source)
    source.add_argument("--url", help=url_help)
    source.add_argument("--cluster-file", metavar="FILE",
                        help="a `kubectl get nodes,pods -A -o json` dump")


def source_conflict(args: argparse.Namespace) -> str | None:
    """The usage error when ``add_source_flags``' flags name more than one source, e.g.
    "--url and --cluster-file: choose one source"; ``None`` when they do not."""
    flags = [flag for flag, value in (("--url", args.url), ("--cluster-file", args.cluster_file),
                                      ("--kubeconfig", args.kubeconfig),
                                      ("--context", args.context)) if value]
    sources = {"--context": "--kubeconfig"}
    if len({sources.get(flag, flag) for flag in flags}) <= 1:
        return None
    return f"{' and '.join(flags)}: choose one source"


def kube_flags_problem(kubeconfig: str | None, context: str | None) -> str | None:
    """What is wrong with ``--kubeconfig`` / ``--context``, checked before the client reads
    them (its own message names neither the flag nor the file): a kubeconfig that cannot be
    read, a context that none of the kubeconfig files has. ``None``: nothing seen wrong."""
    if kubeconfig:
        try:
            Path(kubeconfig).read_bytes()
        except OSError as exc:
            return f"--kubeconfig {kubeconfig}: cannot read ({exc.strerror})"
    if context is None:
        return None
    files = [kubeconfig] if kubeconfig else [
        f for f in os.environ.get("KUBECONFIG", "").split(os.pathsep) if f] or [
        str(Path.home() / ".kube" / "config")]
    names: list[str] = []
    for file in files:
        try:
            document = yaml.safe_load(Path(file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # the client reports an unreadable file its own way
        if isinstance(document, dict) and isinstance(document.get("contexts"), list):
            names += [str(c["name"]) for c in document["contexts"]
                      if isinstance(c, dict) and "name" in c]
    if context in names:
        return None
    return (f"--context {context!r}: no such context in {', '.join(files)} (contexts: "
            f"{', '.join(sorted(names)) or 'none'})")


def read_cluster_file(path: str) -> ClusterObjects:
    """``--cluster-file``'s dump, or "error: --cluster-file PATH: ..." on stderr and a usage
    exit (2: an input file that cannot be used, docs/cli.md)."""
    from extender.runtime.command import error
    from extender.sync.offline import ClusterFileError, load_cluster_file

    try:
        return load_cluster_file(path)
    except ClusterFileError as exc:
        raise error(f"--cluster-file {exc}", EXIT_USAGE) from exc


def add_output_flag(parser: argparse.ArgumentParser, formats: Sequence[str],
                    default: str, *, long_format: bool = False) -> None:
    """``-o FORMAT`` (``args.format``). ``long_format``: ``--output FORMAT`` is accepted too,
    unlisted (``inspect`` and ``catalog`` took it before; elsewhere ``--output`` is a file)."""
    parser.add_argument("-o", dest="format", choices=tuple(formats), default=default,
                        metavar="FORMAT",
                        help=f"output format: {'|'.join(formats)} (default {default})")
    if long_format:
        parser.add_argument("--output", dest="format", choices=tuple(formats),
                            help=argparse.SUPPRESS)


def terminal_width() -> int:
    """Columns of the terminal (``$COLUMNS`` first); 100 when not a terminal."""
    size = shutil.get_terminal_size((DEFAULT_WIDTH, 24))
    return max(MIN_WIDTH, size.columns)


def serialize(document: Any, fmt: str) -> str:
    if fmt == "yaml":
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def emit(document: Any, fmt: str, render: Callable[[], str], *, output: str | None = None
         ) -> int:
    """Write ``document`` as JSON/YAML, or ``render()`` for the text formats, to stdout or to
    the file ``output``; ``EXIT_ERROR`` if the file cannot be written."""
    text = serialize(document, fmt) if fmt in ("json", "yaml") else render() + "\n"
    if output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"error: --output {output}: cannot write ({exc.strerror})", file=sys.stderr)
        return EXIT_ERROR
    print(f"written to {output}", file=sys.stderr)
    return EXIT_OK
