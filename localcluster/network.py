"""Loopback port allocation and HTTP(S) readiness polling."""

from __future__ import annotations

import random
import socket
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

from localcluster.errors import ClusterStartupError
from localcluster.process import ManagedProcess

POLL_INTERVAL_S = 0.1


# Below Linux's ephemeral range (32768-60999): ports the kernel hands to outgoing
# connections never collide with the ones picked here.
PORT_RANGE = (20000, 32767)


def free_port() -> int:
    """An unused TCP port on 127.0.0.1, outside the kernel's ephemeral range.

    Ports picked by the kernel (bind to 0) come from the ephemeral range, where a component's
    listener can collide with another process's outgoing connection in the window between
    picking and binding; a random port below that range avoids most of them, and
    ``LocalCluster.start`` retries the rest.
    """
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randint(*PORT_RANGE)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ClusterStartupError("no free loopback port found")


def tls_context(ca_cert: Path | None) -> ssl.SSLContext:
    """Verify against ``ca_cert``; without one, accept any certificate (kube-scheduler serves
    a self-signed certificate generated at startup)."""
    if ca_cert is not None:
        return ssl.create_default_context(cafile=str(ca_cert))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def wait_until_ready(
    process: ManagedProcess, url: str, timeout_s: float, context: ssl.SSLContext | None = None
) -> None:
    """Poll ``url`` until it answers 200.

    Fails fast with ClusterStartupError when the process exits, instead of waiting out the
    timeout, because a crashed component never becomes ready.
    """
    deadline = time.monotonic() + timeout_s
    last_error = "no response yet"
    while time.monotonic() < deadline:
        exit_code = process.exit_code()
        if exit_code is not None:
            raise ClusterStartupError(
                f"{process.name} exited with status {exit_code} before {url} became ready"
                + _log_excerpt(process)
            )
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                if response.status == 200:
                    return
                last_error = f"HTTP {response.status}"
        except urllib.error.HTTPError as error:  # non-2xx, e.g. 500 while still starting
            last_error = f"HTTP {error.code}: {error.read(300).decode(errors='replace')}"
        except (urllib.error.URLError, OSError) as error:
            last_error = str(error)
        time.sleep(POLL_INTERVAL_S)
    raise ClusterStartupError(
        f"{process.name} did not become ready at {url} within {timeout_s:.0f}s ({last_error})"
        + _log_excerpt(process)
    )


def _log_excerpt(process: ManagedProcess) -> str:
    return f"\n----- last lines of {process.log_path} -----\n{process.log_tail(20)}"
