"""kubectl's conventions for the commands that print objects, in one place (what-if, explain,
inspect): ``--kubeconfig`` / ``--context``, ``-o`` formats, the exit codes, the terminal
width. Only argparse and YAML/JSON writers: importable from any command without loading the
service.

Exit codes, the same in every command that uses this module (docs/cli.md):

- 0: done (a what-if where pods wait is still done: waiting is an answer);
- 1: failure: the input could be read but the work failed (no cluster, an unreachable
  extender, an invalid platform config, a pod that does not exist);
- 2: usage: the command line or an input file is wrong (argparse's own code for bad flags).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

from extender.runtime.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE

EXIT_FAILURE = EXIT_ERROR
"""Kept by this name for the what-if and explain commands: ``runtime.exits.EXIT_ERROR``."""
__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "add_kube_flags", "add_output_flag", "emit",
           "fail", "serialize", "terminal_width"]

MIN_WIDTH, DEFAULT_WIDTH = 60, 100


def add_kube_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig of the cluster (default: $KUBECONFIG, then "
                             "~/.kube/config)")
    parser.add_argument("--context", metavar="NAME",
                        help="the kubeconfig context to use (default: its current-context)")


def add_output_flag(parser: argparse.ArgumentParser, formats: Sequence[str],
                    default: str) -> None:
    parser.add_argument("-o", dest="format", choices=tuple(formats), default=default,
                        metavar="FORMAT",
                        help=f"output format: {'|'.join(formats)} (default {default})")


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
    the file ``output``; ``EXIT_FAILURE`` if the file cannot be written."""
    text = serialize(document, fmt) if fmt in ("json", "yaml") else render() + "\n"
    if output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"error: --output {output}: cannot write ({exc.strerror})", file=sys.stderr)
        return EXIT_FAILURE
    print(f"written to {output}", file=sys.stderr)
    return EXIT_OK


def fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code
