"""Fixtures for the chart checks: the helm binary (built once, cached) and every rendering."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from localcluster import ControlPlaneBinaries, find_binaries
from localcluster.helm import MODES, PRESETS, Helm, find_helm

# The optional parts: node agent, admission webhook, shadow mode.
SWITCHES_ON = ("agent.enabled=true", "webhook.enabled=true", "shadow.enabled=true")

# (id, values files, --set assignments): the defaults, every preset in both modes, and the
# optional parts switched on, so that every template is rendered by at least one case.
RENDERINGS: list[tuple[str, tuple[Path, ...], tuple[str, ...]]] = [
    *[(f"default-{mode}", (), (f"mode={mode}",)) for mode in MODES],
    *[(f"{preset.stem.removeprefix('values-')}-{mode}", (preset,), (f"mode={mode}",))
      for preset in PRESETS for mode in MODES],
    ("everything-on-extender-service", (), (
        "mode=extender-service", "replicas=3", "metrics.serviceMonitor.enabled=true",
        "metrics.dashboard.enabled=true",
        "tls.clientCA=-----BEGIN CERTIFICATE-----", "networkPolicy.schedulerCIDRs={10.0.0.0/24}",
        "image.digest=sha256:" + "0" * 64)),
    ("switches-on-second-scheduler", (), SWITCHES_ON),
    ("switches-on-cert-manager-extender-service", (), (
        *SWITCHES_ON, "mode=extender-service", "tls.source=certManager",
        "tls.certManager.issuerRef.name=cluster-ca")),
    ("webhook-existing-secret-second-scheduler", (), (
        "webhook.enabled=true", "tls.source=existing", "webhook.tls.existingSecret=hook-tls",
        "webhook.tls.caBundle=" + base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode())),
    ("cert-manager-extender-service", (), (
        "mode=extender-service", "tls.source=certManager",
        "tls.certManager.issuerRef.name=cluster-ca")),
    # the demand bridge (docs/autoscaling.md), one demand mode per chart mode
    ("demand-utility-pods-second-scheduler", (), ("demand.enabled=true",)),
    ("demand-eks-second-scheduler", tuple(p for p in PRESETS if p.name == "values-eks.yaml"),
     ("demand.enabled=true",)),
    ("demand-provisioning-request-extender-service", (), (
        "mode=extender-service", "demand.enabled=true", "demand.mode=provisioning-request",
        "demand.replicas=2")),
]


@pytest.fixture(scope="session")
def helm() -> Helm:
    try:
        return Helm(find_helm())
    except RuntimeError as error:
        pytest.fail(f"helm unavailable: {error}", pytrace=False)


@pytest.fixture(scope="session")
def renderings(helm: Helm) -> dict[str, list[dict[str, Any]]]:
    return {name: helm.documents(values_files=files, set_values=sets)
            for name, files, sets in RENDERINGS}


@pytest.fixture(scope="session")
def controlplane_binaries() -> ControlPlaneBinaries:
    """As in tests/e2e: the cached control-plane build (built on first use)."""
    try:
        return find_binaries()
    except (RuntimeError, FileNotFoundError) as error:
        pytest.fail(f"control-plane binaries unavailable: {error}", pytrace=False)
