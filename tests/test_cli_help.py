"""``--help`` of every command shows each flag's default (``(default: X)`` in its help), as
``serve --help`` does, so nobody has to read the source to learn what a flag falls back to."""

from __future__ import annotations

import argparse

import pytest

from extender.cli import build_parser
from extender.commands import COMMANDS


def _command(name: str) -> argparse.ArgumentParser:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen: argparse.ArgumentParser = sub.choices[name]
    return chosen


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_flag_with_a_default_shows_it_in_its_help(name: str) -> None:
    # a default that says something: not None, an off switch or an empty repeatable list
    hidden = [a.option_strings[0] for a in _command(name)._actions
              if a.option_strings and a.help != argparse.SUPPRESS and not a.required
              and a.default not in (None, False, [], argparse.SUPPRESS)
              and "default" not in (a.help or "")]
    assert hidden == []


def test_webhook_certs_help_shows_the_service_namespace_secret_and_days(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _command("webhook-certs").parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines
    for shown in ("(default: gpu-extender-webhook)", "(default: kube-system)",
                  "(default: gpu-extender-webhook-tls)", "(default: 365)"):
        assert shown in text
