"""docs/autoscaling.md and the Karpenter NodeOverlays it ships: every overlay parses, covers
instance types the catalog knows, and promises per node no more share capacity than such a
node publishes (the GPU count from the instance-type table, the VRAM per GPU at most what the
node reports), and the ProvisioningRequest CRD the tests apply is the v1 API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.catalog.instance_types import shipped_instance_types
from extender.config import load_config_text
from extender.model import RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI
from extender.platform import build_platform
from extender.quantity import parse_quantity

ROOT = Path(__file__).parents[2]
OVERLAYS = ROOT / "docs" / "autoscaling" / "karpenter-nodeoverlays.yaml"
CRD = ROOT / "tests" / "data" / "crds" / "provisioningrequests.autoscaling.x-k8s.io.yaml"
MIB = 1024 * 1024
INSTANCE_TYPE = "node.kubernetes.io/instance-type"

# What a node of the type reports (GFD's nvidia.com/gpu.memory, MiB per GPU), the most an
# overlay may promise per GPU. T4: 15360 (nominal 16384); L4: 23034; A10G: 23028; L40S: 46068.
REPORTED_MIB = {"t4": 15360, "l4": 23034, "a10g": 23028, "l40s": 46068}
# The AWS families the overlays cover: every instance type of theirs in the catalog has one.
COVERED_PREFIXES = ("g4dn.", "g5.", "g6.", "g6e.")


def overlays() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(OVERLAYS.read_text()) if doc]


def _instance_types(overlay: dict[str, Any]) -> list[str]:
    [requirement] = overlay["spec"]["requirements"]
    assert (requirement["key"], requirement["operator"]) == (INSTANCE_TYPE, "In")
    return list(requirement["values"])


def test_every_overlay_is_a_karpenter_node_overlay_with_a_unique_name() -> None:
    docs = overlays()
    assert len(docs) >= 10
    assert {(d["apiVersion"], d["kind"]) for d in docs} == {("karpenter.sh/v1alpha1",
                                                            "NodeOverlay")}
    names = [d["metadata"]["name"] for d in docs]
    assert len(set(names)) == len(names)
    for doc in docs:
        assert set(doc["spec"]) == {"requirements", "capacity"}, doc["metadata"]["name"]
        assert set(doc["spec"]["capacity"]) == {RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI}


@pytest.mark.parametrize("overlay", overlays(), ids=lambda d: d["metadata"]["name"])
def test_overlay_capacity_is_what_such_a_node_publishes_at_most(overlay: dict[str, Any]) -> None:
    """g4dn.12xlarge: 4 T4 (instance_types.yaml) -> gpu-milli 4 x 1000 = 4000, gpu-memory
    60Gi = 4 x 15360 MiB: 15360 per GPU, <= the reported 15360 and <= the catalog's 16384."""
    catalog = build_platform(load_config_text("")).catalog
    table = shipped_instance_types()
    shapes = set()
    for name in _instance_types(overlay):
        assert name in table, f"{name} is not in extender/catalog/instance_types.yaml"
        [index] = catalog.resolve(table[name]["type"]) or frozenset()
        shapes.add((catalog.id_of(index), int(table[name]["count"])))
    [(type_id, count)] = shapes  # one GPU type and count per overlay
    capacity = overlay["spec"]["capacity"]
    assert int(capacity[RESOURCE_GPU_MILLI]) == 1000 * count
    memory = int(parse_quantity(capacity[RESOURCE_GPU_MEMORY]))
    assert memory % (count * MIB) == 0
    per_gpu_mib = memory // (count * MIB)
    nominal = int(catalog.memory_mib[catalog.index_of(type_id)])
    assert per_gpu_mib <= REPORTED_MIB[type_id] <= nominal
    assert per_gpu_mib >= 0.9 * nominal, "a figure far below the GPU wastes the node"


def test_every_instance_type_of_the_covered_families_has_an_overlay() -> None:
    covered = {name for doc in overlays() for name in _instance_types(doc)}
    shipped = {name for name in shipped_instance_types()
               if name.startswith(COVERED_PREFIXES)}
    assert shipped - covered == set()


def test_the_provisioning_request_crd_is_the_v1_api_with_a_status_subresource() -> None:
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    assert (spec["group"], spec["names"]["kind"], spec["scope"]) == (
        "autoscaling.x-k8s.io", "ProvisioningRequest", "Namespaced")
    [version] = spec["versions"]
    assert version["name"] == "v1" and version["storage"] and version["subresources"] == {
        "status": {}}
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(schema["required"]) == {"podSets", "provisioningClassName"}
    pod_set = schema["properties"]["podSets"]
    assert pod_set["maxItems"] == 32
    assert set(pod_set["items"]["required"]) == {"count", "podTemplateRef"}


def test_the_autoscaling_doc_names_the_overlays_and_what_to_enable() -> None:
    text = (ROOT / "docs" / "autoscaling.md").read_text()
    for needle in ("docs/autoscaling/karpenter-nodeoverlays.yaml",
                   "--enable-provisioning-requests", "NodeOverlay=true", "demand.enabled"):
        assert needle in text, needle
    assert "docs/autoscaling.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize(("mapping", "label", "value"), [
    ("eks-karpenter.yaml", "karpenter.k8s.aws/instance-gpu-name", "l4"),
    (None, "nvidia.com/gpu.product", "NVIDIA-L4"),
], ids=["karpenter-typeLabel", "gfd-default"])
def test_utility_pods_ask_for_the_label_the_doc_says(mapping: str | None, label: str,
                                                     value: str) -> None:
    """docs/autoscaling.md, path 2: with `typeLabel: eks-karpenter` (docs/admission/) the
    utility pods' affinity names Karpenter's instance-gpu-name, which Karpenter knows before a
    node exists; without a typeLabel it is GFD's product label."""
    from extender.config import load_config
    from extender.demand.emit import Emitter

    config = load_config(ROOT / "docs" / "admission" / mapping if mapping else None)
    platform = build_platform(config)
    shape = Emitter(platform, config.demand, namespace="kube-system",
                    scheduler_name="gpu-scheduler").shape("l4", 1)
    assert shape.affinity is not None
    terms = shape.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    expressions = [e for term in terms for e in term["matchExpressions"]]
    assert any(e["key"] == label and value in e["values"] for e in expressions), expressions
