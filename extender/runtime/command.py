"""How every command starts, fails and exits: exit codes, the common flags, config-or-exit,
kube-or-exit, the signal wait, one way to report a bad flag and one to stop with a message
(``fail``; ``error`` for kubectl's "error: ..." line). How a command prints objects, and the
spelling of the kube flags, is ``runtime.kubectl``'s job.

A command module has ``register(commands)`` (add its parser, ``set_defaults(run=...)``) and a
``run(args) -> int``. Its start-up reads::

    def run(args):
        configure_logging(args)
        platform = platform_or_exit(args.config)        # prints the ConfigError, exits 1
        configuration = kube_or_exit(args.kubeconfig)   # prints the KubeError, exits 1
        ...
        return run_until_signal(service, listener)      # until SIGTERM / SIGINT

``CommandExit`` carries the exit code to ``extender.cli.main``, which returns it; nothing here
calls ``sys.exit`` (tests call ``main`` and read the code).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Protocol

from extender.errors import ConfigError, FieldError
from extender.runtime.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from extender.runtime.logs import FORMATS, LEVELS

if TYPE_CHECKING:
    from extender.platform import Platform

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE"]  # and what is defined below

DEFAULT_HEAD_TIMEOUT_S = 5.0
"""Seconds a connection gets for its TLS handshake, request line and headers (per request on a
kept-alive connection, counted from its first byte); see ``extender.runtime.worker``."""


class CommandExit(Exception):  # noqa: N818 (it is a control-flow signal, like SystemExit)
    """Stop the command with ``code``; the message (if any) was printed already."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def flag_error(flag: str, message: str, command: str = "gpu-extender serve") -> ConfigError:
    """A bad command-line flag, reported like a config field (the flag is its path)."""
    return ConfigError([FieldError(flag, message)], source=f"{command} flags")


def fail(message: object, code: int = EXIT_ERROR) -> CommandExit:
    """Print ``message`` on stderr; the ``CommandExit`` to raise."""
    print(message, file=sys.stderr, flush=True)
    return CommandExit(code)


def error(message: object, code: int = EXIT_USAGE) -> CommandExit:
    """``fail`` with kubectl's ``error: <message>`` line (a usage error by default)."""
    return fail(f"error: {message}", code)


def add_common_flags(parser: argparse.ArgumentParser, *, config: bool = True,
                     kube: bool = False, logging: bool = True,
                     listen: tuple[str, int] | None = None) -> None:
    """The flags every process spells the same way: ``--config``, ``--kubeconfig``,
    ``--log-level``/``--log-format``, ``--host``/``--port`` (``listen`` gives their defaults),
    ``--head-timeout`` (with ``listen``)."""
    if config:
        parser.add_argument("--config", metavar="FILE",
                            help="platform config YAML (default: the shipped defaults)")
    if kube:
        from extender.runtime.kubectl import add_kube_flags

        add_kube_flags(parser, in_cluster=True)
    if logging:
        parser.add_argument("--log-level", choices=LEVELS, default="info",
                            help="log level (default: info)")
        parser.add_argument("--log-format", choices=FORMATS, default="json",
                            help="json (default): one JSON object per line on stderr; text: "
                                 "for a terminal")
    if listen is not None:
        host, port = listen
        parser.add_argument("--host", default=host, help=f"address to listen on (default: "
                                                         f"{host})")
        parser.add_argument("--port", type=int, default=port, help=f"port (default: {port})")
        parser.add_argument("--head-timeout", type=positive_seconds,
                            default=DEFAULT_HEAD_TIMEOUT_S, metavar="SECONDS",
                            help="a connection's TLS handshake, request line and headers must "
                                 "arrive within this (default: "
                                 f"{DEFAULT_HEAD_TIMEOUT_S:g}); a stalled client is closed "
                                 "without holding a thread")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from exc
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from exc
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def configure_logging(args: argparse.Namespace) -> None:
    from extender.runtime import logs

    logs.configure(getattr(args, "log_level", "info"), getattr(args, "log_format", "json"))


def configure_workstation_logging() -> None:
    """The workstation commands (inspect, explain, what-if): the ``extender`` loggers' warnings
    and errors as text with their fields (``... not counted pod=ml/b node=t4-0``) on stderr,
    beside the command's own output (without it Python prints a bare message that names no
    pod or node). Levels are left alone; a second call adds nothing."""
    from extender.runtime.logs import CurrentStderr, TextFormatter

    logger = logging.getLogger("extender")
    if not any(isinstance(h, CurrentStderr) for h in logger.handlers):
        handler = CurrentStderr()
        handler.setLevel(logging.WARNING)
        handler.setFormatter(TextFormatter())
        logger.addHandler(handler)


def platform_or_exit(path: str | None) -> Platform:
    """The platform config at ``path`` (the shipped defaults for ``None``), or its
    ``ConfigError`` printed and ``CommandExit(EXIT_ERROR)``."""
    from extender.platform import load_platform

    try:
        return load_platform(path)
    except ConfigError as exc:
        raise fail(exc) from exc


def kube_or_exit(kubeconfig: str | None) -> Any:
    """The API server's client configuration (``--kubeconfig``, else in-cluster, else
    $KUBECONFIG), or the ``KubeError`` printed and ``CommandExit(EXIT_ERROR)``."""
    from extender.apiserver.client import load_configuration
    from extender.apiserver.errors import KubeError
    from extender.runtime.kubectl import kube_flags_problem

    problem = kube_flags_problem(kubeconfig, None)
    if problem:
        raise fail(f"error: {problem}")
    try:
        return load_configuration(kubeconfig)
    except KubeError as exc:
        raise fail(exc) from exc


def wait_for_signal(stop: threading.Event | None = None) -> int:
    """Block until SIGTERM or SIGINT (or ``stop`` is set); the signal number (0 for ``stop``).
    Installs the handlers, so call it from the main thread."""
    done = stop or threading.Event()
    received: list[int] = []

    def handle(signum: int, _frame: object) -> None:
        received.append(signum)
        done.set()

    previous = {signum: signal.signal(signum, handle)
                for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        done.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return received[0] if received else 0


class Startable(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


def run_until_signal(service: Startable, listener: Startable | None = None, *,
                     started: str = "") -> int:
    """A long-running command's life: ``listener`` (its health/metrics/report routes) starts
    first, so probes answer from the first moment, then ``service``; ``started`` is printed on
    stderr; on SIGTERM/SIGINT the service stops, then the listener (also when the wait is
    interrupted by an error). ``EXIT_OK``. Call it from the main thread."""
    if listener is not None:
        listener.start()
    try:
        service.start()
        if started:
            print(started, file=sys.stderr, flush=True)
        try:
            wait_for_signal()
        finally:
            service.stop()
    finally:
        if listener is not None:
            listener.stop()
    return EXIT_OK
