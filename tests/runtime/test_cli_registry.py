"""The CLI parses the command name first and imports only that command's module: ``--help``
and ``check-config`` load neither the simulator, the service nor Flask; every registered
module adds the command it is registered for; a missing dependency names its extra."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from extender.cli import main, missing_extra
from extender.commands import COMMANDS

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("extender.simulator", "extender.server", "extender.scheduling", "flask", "gunicorn",
         "kubernetes", "prometheus_client", "numpy", "grpc")


def loaded_after(argv: list[str]) -> set[str]:
    script = ("import sys\nfrom extender.cli import main\n"
              f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
              "print('MODULES', *sorted(sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return set(out.rpartition("MODULES ")[2].split())


def test_help_imports_no_simulator_service_or_framework() -> None:
    loaded = loaded_after(["--help"])
    assert "extender.cli" in loaded
    assert not [m for m in loaded if m.startswith(HEAVY)], sorted(loaded)


@pytest.mark.parametrize("argv", [["serve", "--help"], ["check-config", "--help"],
                                  ["agent", "--help"]])
def test_a_command_imports_only_its_own_module(argv: list[str]) -> None:
    loaded = loaded_after(argv)
    assert COMMANDS[argv[0]].module in loaded
    assert "extender.simulator" not in loaded and "extender.whatif.command" not in loaded
    others = {entry.module for name, entry in COMMANDS.items()
              if entry.module not in (COMMANDS[argv[0]].module, "extender.cli")}
    assert not others & loaded, sorted(others & loaded)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_registered_module_adds_its_command(name: str) -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    importlib.import_module(COMMANDS[name].module).register(commands)
    assert name in commands.choices
    assert callable(commands.choices[name].get_default("run"))


def test_an_unknown_command_lists_the_registered_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["no-such-command"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'no-such-command'" in err and "serve" in err


def test_a_missing_dependency_names_the_extra(capsys: pytest.CaptureFixture[str]) -> None:
    code = missing_extra("agent", ModuleNotFoundError("No module named 'grpc'", name="grpc"))
    assert code == 1
    assert capsys.readouterr().err == (
        "gpu-extender agent: the Python module 'grpc' is not installed; this command needs "
        "the [agent] dependencies: pip install 'gpu-extender[agent]'\n")


def test_a_missing_module_of_our_own_is_not_blamed_on_an_extra() -> None:
    error = ModuleNotFoundError("No module named 'extender.nope'", name="extender.nope")
    with pytest.raises(ModuleNotFoundError):
        missing_extra("serve", error)
