"""docs/cli.md lists every flag of ``gpu-extender webhook`` and ``webhook-certs``: a flag added
to a parser and not to its section of the page fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from extender.cli import build_parser

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _flags(name: str) -> list[str]:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(flag for action in sub.choices[name]._actions
                  for flag in action.option_strings if flag.startswith("--") and flag != "--help")


def _section(heading: str) -> str:
    """The text from ``heading`` to the next ``## `` heading."""
    text = CLI_MD.read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


@pytest.mark.parametrize("name", ["webhook", "webhook-certs"])
def test_every_flag_of_the_webhook_commands_is_in_docs_cli_md(name: str) -> None:
    # a flag counts in the first cell of a row of the command's table: "| `--watch-nodes` |",
    # "| `--host HOST` / `--port PORT` |" (mentioned in another flag's text is not listed)
    rows = [line.split("|")[1] for line in _section(f"## `gpu-extender {name}`\n").splitlines()
            if line.startswith("| `")]
    written = {flag for cell in rows for flag in re.findall(r"`(--[a-z0-9-]+)", cell)}
    missing = [flag for flag in _flags(name) if flag not in written]
    assert _flags(name), name  # the parser was found (a test that cannot fail is none)
    assert missing == []
