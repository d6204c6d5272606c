"""PID -> (pod UID, container ID) through ``/proc/<pid>/cgroup``, as dcgm-exporter's pid
mapper does, for every layout the kubelet creates:

- cgroup v1 or v2 (``N:controller:/path`` lines, or the single ``0::/path`` line);
- the ``cgroupfs`` driver: ``/kubepods/burstable/pod<uid>/<container id>``;
- the ``systemd`` driver: ``/kubepods.slice/kubepods-burstable.slice/
  kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope`` (also ``docker-``,
  ``crio-``), the Guaranteed class without its own slice, and paths nested below a node
  container (kind, a cgroup namespace: ``/../kubepods...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_POD = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
                  r"(?:\.slice)?/")
_CONTAINER = re.compile(r"^(?:(?:cri-containerd|containerd|docker|crio)-)?([0-9a-f]{64})"
                        r"(?:\.scope)?$")


@dataclass(frozen=True)
class ContainerRef:
    pod_uid: str
    container_id: str
    """The runtime's container ID without its scheme (64 hex digits)."""


def parse_cgroup(text: str) -> ContainerRef | None:
    """The container a ``/proc/<pid>/cgroup`` file places its process in; ``None`` for a
    process outside any pod (host daemons, the conmon of CRI-O)."""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        path = parts[2].rstrip("/") + "/"
        match = _POD.search(path)
        if match is None:
            continue
        rest = path[match.end():].strip("/").split("/")
        container = _CONTAINER.match(rest[0]) if rest and rest[0] else None
        if container is None:
            continue
        return ContainerRef(match.group(1).replace("_", "-"), container.group(1))
    return None


class PidMapper:
    """Reads ``<proc_root>/<pid>/cgroup`` (the host's /proc: the agent runs with hostPID)."""

    def __init__(self, proc_root: str | Path = "/proc") -> None:
        self._root = Path(proc_root)

    def container_of(self, pid: int) -> ContainerRef | None:
        try:
            data = (self._root / str(pid) / "cgroup").read_bytes()
        except OSError:  # the process ended, or is not visible
            return None
        # a cgroup path is whatever bytes created it: one that is not UTF-8 names no pod of
        # ours (the patterns are ASCII), and must not stop the pass
        return parse_cgroup(data.decode("utf-8", errors="replace"))


def strip_scheme(container_id: str) -> str:
    """``containerd://abc`` (a pod's ``status.containerStatuses[].containerID``) -> ``abc``."""
    return container_id.split("://", 1)[-1]
