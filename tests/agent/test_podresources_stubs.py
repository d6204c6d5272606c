"""The committed PodResources stubs are what hack/gen-podresources.sh generates from the
committed proto (so nobody edits them by hand, and a proto update is not forgotten)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from localcluster.binaries import REPO_ROOT

STUBS = ("api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py")


def test_committed_stubs_equal_freshly_generated_ones(tmp_path: Path) -> None:
    subprocess.run(["bash", str(REPO_ROOT / "hack" / "gen-podresources.sh"), str(tmp_path)],
                   check=True, cwd=REPO_ROOT,
                   env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    for name in STUBS:
        fresh = (tmp_path / "extender" / "agent" / "podresources" / name).read_text()
        committed = (REPO_ROOT / "extender" / "agent" / "podresources" / name).read_text()
        assert fresh == committed, f"{name} differs: run hack/gen-podresources.sh"


def test_the_service_is_the_kubelets_on_the_wire() -> None:
    from extender.agent.podresources import api_pb2

    service = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert service.full_name == "v1.PodResourcesLister"
    assert {m.name for m in service.methods} >= {"List", "GetAllocatableResources", "Get"}
