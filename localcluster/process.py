"""One child process of the local control plane, with its log file and a clean shutdown."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

STOP_TIMEOUT_S = 10.0


def _parent_death_guard() -> list[str]:
    """Prefix that makes the kernel SIGKILL the child if this Python process dies without
    cleaning up (SIGKILL, crash), so no control-plane process is ever orphaned.

    ``setpriv`` (util-linux) sets PR_SET_PDEATHSIG and then execs the real command; the setting
    survives exec. Doing it with ``preexec_fn`` instead would be unsafe in a threaded parent.
    SIGKILL rather than SIGTERM: all components receive it at once, and a kube-apiserver whose
    etcd disappears mid graceful-shutdown hangs for minutes. The state is throwaway anyway.
    Note the signal is tied to the *thread* that started the child: start clusters from a
    thread that outlives them (normally the main thread).
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


class ManagedProcess:
    """A started command whose stdout and stderr go to ``log_path``.

    The child leads its own process group, so stop() also reaches anything it forked
    (gunicorn workers, for example).
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.log_path = log_path
        with log_path.open("ab") as log:
            log.write(f"$ {' '.join(self.command)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                _parent_death_guard() + self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self._popen.pid

    def exit_code(self) -> int | None:
        """The exit status, or None while the process is still running."""
        return self._popen.poll()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM the whole process group, then SIGKILL it if it has not exited in time."""
        if self._popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self._popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self._popen.wait()
        # The leader may exit before its children (a gunicorn master killed early); make sure
        # nothing of the group survives. ESRCH just means the group is already gone.
        self._signal_group(signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL the whole process group at once (a crash, not a shutdown) and reap it."""
        self._signal_group(signal.SIGKILL)
        self._popen.wait()

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, sig)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
