"""Shared fixtures for end-to-end tests against a real etcd + kube-apiserver + kube-scheduler."""

from __future__ import annotations

import pytest

from localcluster import ControlPlaneBinaries, find_binaries


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
