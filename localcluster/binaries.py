"""Locate etcd, kube-apiserver and kube-scheduler for the local cluster."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-controlplane.sh"
OVERRIDE_ENV = "GPU_EXTENDER_CONTROLPLANE_BIN"


@dataclass(frozen=True)
class ControlPlaneBinaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path

    @classmethod
    def in_directory(cls, directory: Path) -> ControlPlaneBinaries:
        binaries = cls(
            directory / "etcd", directory / "kube-apiserver", directory / "kube-scheduler"
        )
        missing = [
            str(path)
            for path in (binaries.etcd, binaries.kube_apiserver, binaries.kube_scheduler)
            if not os.access(path, os.X_OK)
        ]
        if missing:
            raise FileNotFoundError(f"control-plane binaries missing or not executable: {missing}")
        return binaries


def built_by(script: Path) -> Path:
    """Run a hack/build-*.sh script (instant when its cache is warm; its progress goes to our
    stderr) and return the path it prints last."""
    result = subprocess.run(["bash", str(script)], stdout=subprocess.PIPE, text=True,
                            check=False)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"{script} failed with status {result.returncode}; see its output "
                           "above")
    return Path(lines[-1])


def find_binaries() -> ControlPlaneBinaries:
    """$GPU_EXTENDER_CONTROLPLANE_BIN if set; otherwise the cached build for the versions pinned
    in hack/, building it first when needed.

    The build script is the single source of truth for the cache key, so it is always asked
    (it returns immediately when the binaries exist). Its progress goes to our stderr; the bin
    directory is the last line of its stdout. A cold build takes many minutes.
    """
    override = os.environ.get(OVERRIDE_ENV)
    if override:
        return ControlPlaneBinaries.in_directory(Path(override))
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{BUILD_SCRIPT} failed with status {result.returncode}; see its output above"
        )
    lines = result.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{BUILD_SCRIPT} printed no binary directory")
    return ControlPlaneBinaries.in_directory(Path(lines[-1]))
