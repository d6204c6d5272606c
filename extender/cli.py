"""``gpu-extender`` command line: serve, simulate, check-config."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from extender.errors import ConfigError


def _check_config(args: argparse.Namespace) -> int:
    from extender.core.scoring.registry import strategy_names
    from extender.platform import load_platform

    try:
        platform = load_platform(args.file)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    config = platform.config
    print(f"{args.file}: OK")
    print(f"  accelerators: {len(config.accelerators)} types "
          f"({sum(t.protected for t in config.accelerators)} protected)")
    print(f"  node label presets: {', '.join(config.node_labels.presets) or 'none'}; "
          f"custom mappings: {len(config.node_labels.custom)}")
    print(f"  scoring strategy: {config.scoring.strategy} "
          f"(available: {', '.join(strategy_names())})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-extender",
        description="Kubernetes scheduler extender for GPU-type-aware, fraction-aware placement.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check-config", help="validate a platform config file")
    check.add_argument("file", help="platform config YAML")
    check.set_defaults(run=_check_config)
    _add_optional_commands(commands)
    return parser


def _add_optional_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]
                           ) -> None:
    """Commands whose modules register themselves (serve, simulate)."""
    from extender.commands import COMMAND_MODULES

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(commands)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
