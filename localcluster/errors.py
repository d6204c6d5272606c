"""Exceptions raised by the local control-plane harness."""

from pathlib import Path


class ClusterStartupError(RuntimeError):
    """A control-plane component failed to start or become ready.

    When LocalCluster raises it, every process it started has been stopped; the message names the
    component and includes the tail of its log, and ``workdir`` is the kept directory holding
    all logs (None if the failure came before it existed).
    """

    def __init__(self, message: str, workdir: Path | None = None) -> None:
        super().__init__(message)
        self.workdir = workdir
