"""Shared fixtures for end-to-end tests against a real etcd + kube-apiserver + kube-scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster import ControlPlaneBinaries, find_binaries
from localcluster.kwok import find_kwok


@pytest.fixture(scope="session")
def controlplane_binaries() -> ControlPlaneBinaries:
    """Locate the control-plane binaries once per session, building them on first use.

    Honours $GPU_EXTENDER_CONTROLPLANE_BIN. A cold build takes minutes (see
    hack/build-controlplane.sh); later sessions reuse the cache instantly.
    """
    try:
        return find_binaries()
    except (RuntimeError, FileNotFoundError) as error:
        pytest.fail(f"control-plane binaries unavailable: {error}", pytrace=False)


@pytest.fixture(scope="session")
def kwok_binary() -> Path:
    """kwok, built once per machine (hack/build-kwok.sh; minutes cold, instant after). Use it
    with ``localcluster.kwok.Kwok.start(cluster, kwok_binary)`` for nodes with a pod
    lifecycle (pods go Running, graceful deletions complete)."""
    try:
        return find_kwok()
    except (RuntimeError, FileNotFoundError) as error:
        pytest.fail(f"kwok unavailable: {error}", pytrace=False)
