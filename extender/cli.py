"""``gpu-extender`` command line: serve, simulate, check-config, agent."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from extender.errors import ConfigError

if TYPE_CHECKING:
    from extender.config.types import PlatformConfig


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
    print(f"  admission: {_admission_summary(config)}")
    return 0


def _admission_summary(config: PlatformConfig) -> str:
    admission = config.admission
    mapping = admission.platform_mapping
    parts = [f"scheduler name {admission.scheduler_name.name}"
             if admission.scheduler_name.enabled else "scheduler name off"]
    if mapping.enabled:
        parts.append(f"type label {mapping.type_label or 'none'}, "
                     f"{len(mapping.gpu_types)} gpuTypes entries")
    else:
        parts.append("platform mapping off")
    devices = admission.visible_devices
    parts.append(f"{devices.env} for {', '.join(devices.kinds)}" if devices.enabled
                 else "visible-devices env off")
    return "; ".join(parts)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-extender",
        description="Kubernetes scheduler extender for GPU-type-aware, fraction-aware placement.",
    )
    from extender import __version__

    parser.add_argument("--version", action="version", version=f"gpu-extender {__version__}")
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


KUBECTL_COMMANDS = ("inspect", "catalog", "explain")
EXIT_USAGE = 2


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """``kubectl gpu <inspect|catalog|explain> ...``: kubectl runs ``kubectl-gpu`` with the rest of
    the line; the subcommands are gpu-extender's own."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in KUBECTL_COMMANDS:
        print("usage: kubectl gpu {inspect,catalog,explain} [options]  (kubectl gpu inspect -h)",
              file=sys.stderr)
        return EXIT_USAGE if args and args[0] not in ("-h", "--help") else 0
    return main(args)


def kubectl_entry() -> None:  # pragma: no cover (console script)
    sys.exit(kubectl_main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
