"""A node whose GPUs the extender cannot decode gets a Warning event, written with the
extender's own (shipped) RBAC, visible as `kubectl describe node` shows it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.gpu_helpers import gpu_cluster

pytestmark = pytest.mark.e2e


def test_an_unknown_gpu_model_is_a_warning_event_on_its_node(
        controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        cluster.create_node("mystery-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "Mystery-X1"})
        cluster.create_node("t4-0", {"nvidia.com/gpu": 2},
                            labels={"nvidia.com/gpu.product": "Tesla-T4"})
        api = cluster.api()

        def warnings() -> list[Any]:
            return [e for e in api.list_namespaced_event(
                "default", field_selector="involvedObject.kind=Node").items
                if e.reason == "GpuDecodeFailed"]

        found = cluster.wait_for(warnings, timeout_s=30, description="a GpuDecodeFailed event")
        assert [e.involved_object.name for e in found] == ["mystery-0"]
        assert found[0].type == "Warning"
        assert "Mystery-X1" in found[0].message
        assert found[0].involved_object.uid == \
            api.read_node("mystery-0").metadata.uid
