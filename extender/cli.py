"""``gpu-extender`` command line: the command name is parsed first, then only that command's
module (``extender.commands.COMMANDS``) is imported and adds its flags.

``check-config`` lives here: it is the one command with no process behind it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from extender.commands import COMMANDS
from extender.runtime.command import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CommandExit,
    platform_or_exit,
)

if TYPE_CHECKING:
    from extender.config.types import PlatformConfig

PROG = "gpu-extender"
DESCRIPTION = "Kubernetes scheduler extender for GPU-type-aware, fraction-aware placement."


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = commands.add_parser("check-config", help=COMMANDS["check-config"].help)
    check.add_argument("file", help="platform config YAML")
    check.set_defaults(run=_check_config)


def _check_config(args: argparse.Namespace) -> int:
    from extender.core.scoring.registry import strategy_names

    platform = platform_or_exit(args.file)
    config = platform.config
    print(f"{args.file}: OK")
    print(f"  accelerators: {len(config.accelerators)} types "
          f"({sum(t.protected for t in config.accelerators)} protected)")
    print(f"  node label presets: {', '.join(config.node_labels.presets) or 'none'}; "
          f"custom mappings: {len(config.node_labels.custom)}")
    print(f"  scoring strategy: {config.scoring.strategy} "
          f"(available: {', '.join(strategy_names())})")
    print(f"  admission: {_admission_summary(config)}")
    return EXIT_OK


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


def _command_name(argv: Sequence[str]) -> str | None:
    """The first argument that is not an option (``None``: none, or ``-h`` comes first)."""
    for arg in argv:
        if arg in ("-h", "--help"):
            return None
        if not arg.startswith("-"):
            return arg
    return None


EVERY = "*"
"""``build_parser(EVERY)``: every command with its flags (every module imported; tests that
check command lines, docs)."""


def build_parser(command: str | None = EVERY, *, prog: str = PROG) -> argparse.ArgumentParser:
    """The parser with ``command``'s flags (its module imported), and every other command
    listed by name and help only; ``None``: the list alone (``--help``). ``prog``: the name
    usage lines start with (``kubectl gpu`` for the plugin)."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    from extender import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    wanted = {e.module for e in COMMANDS.values()} if command == EVERY else \
        {COMMANDS[command].module} if command in COMMANDS else set()
    for module in dict.fromkeys(e.module for e in COMMANDS.values() if e.module in wanted):
        importlib.import_module(module).register(commands)
    for name, entry in COMMANDS.items():
        if name not in commands.choices:
            commands.add_parser(name, help=entry.help, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = _command_name(args_list)
    try:
        parser = build_parser(command, prog=prog)
        args = parser.parse_args(args_list)
        code: int = args.run(args)
    except CommandExit as exc:
        return exc.code
    except ModuleNotFoundError as exc:
        return missing_extra(command, exc)
    return code


def missing_extra(command: str | None, error: ModuleNotFoundError) -> int:
    """A third-party module is not installed: name the extra that brings it (our own
    modules missing is a broken installation, and re-raised)."""
    missing = (error.name or "").split(".")[0]
    if not missing or missing == "extender" or command not in COMMANDS:
        raise error
    extra = COMMANDS[command].extra
    wanted = f"pip install 'gpu-extender[{extra}]'" if extra else "reinstall gpu-extender"
    print(f"{PROG} {command}: the Python module {missing!r} is not installed; this command "
          f"needs the [{extra or 'core'}] dependencies: {wanted}", file=sys.stderr)
    return EXIT_ERROR


KUBECTL_COMMANDS = ("inspect", "catalog", "explain")


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """``kubectl gpu <inspect|catalog|explain> ...``: kubectl runs ``kubectl-gpu`` with the rest of
    the line; the subcommands are gpu-extender's own."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in KUBECTL_COMMANDS:
        print("usage: kubectl gpu {inspect,catalog,explain} [options]  (kubectl gpu inspect -h)",
              file=sys.stderr)
        return EXIT_USAGE if args and args[0] not in ("-h", "--help") else 0
    return main(args, prog="kubectl gpu")


def kubectl_entry() -> None:  # pragma: no cover (console script)
    sys.exit(kubectl_main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
