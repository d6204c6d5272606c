"""The platform mapping writes only label values the API server takes: every catalog type,
every amount form, every type label (the real server's dry run is
``tests/e2e/test_webhook_label_values.py``), and what each platform really labels."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from extender.config import load_config_text
from extender.platform import build_platform
from extender.webhook.admit import PodAdmission
from tests.builders import make_pod
from tests.webhook.every_type import mutated_pods
from tests.webhook.helpers import review

# apimachinery IsValidLabelValue, written out independently of extender.config.presets
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
PRODUCT = "nvidia.com/gpu.product"
CASES = list(mutated_pods())


def written_values(pod: dict[str, Any]) -> list[str]:
    """Every value the affinity and the tolerations carry."""
    spec = pod["spec"]
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms") or []
    values = [v for t in terms for e in t["matchExpressions"] for v in e.get("values", ())]
    return values + [t["value"] for t in spec.get("tolerations") or () if "value" in t]


def test_every_case_is_covered() -> None:
    # 6 type labels x (19 types x 3 forms + the MIG profiles: A30 3, seven types 6 each)
    assert len(CASES) == 6 * (19 * 3 + 3 + 7 * 6)
    assert all(written_values(pod) for case, pod in CASES if case.startswith("gke:t4"))


@pytest.mark.parametrize(("case", "pod"), CASES, ids=[c for c, _ in CASES])
def test_every_written_value_is_a_label_value(case: str, pod: dict[str, Any]) -> None:
    bad = [v for v in written_values(pod) if not LABEL_VALUE.match(v) or len(v) > 63]
    assert bad == [], case


def product_values(type_id: str, form: str = "whole", label: str = "gfd") -> list[str]:
    pod = dict(CASES)[f"{label}:{type_id}:{form}"]
    return written_values(pod)


@pytest.mark.parametrize(("label", "type_id", "expected"), [
    pytest.param("gfd", "rtx-pro-6000",
                 ["NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
                  "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-SHARED"],
                 id="GFD: the product as GFD writes it; Flyte's 'RTX PRO 6000' is no product"),
    pytest.param("gfd", "a100-80gb",
                 ["NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB-SHARED",
                  "NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-80GB-PCIe-SHARED",
                  "A100-SXM4-80GB", "A100-SXM4-80GB-SHARED", "A100-80GB-PCIe",
                  "A100-80GB-PCIe-SHARED"], id="GFD: 'A100 80G' (Flyte 2 SDK) left out"),
    pytest.param("flyte", "rtx-pro-6000",
                 ["rtx-pro-6000", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
                  "nvidia-rtx-pro-6000"],
                 id="Flyte: flytepropeller maps 'RTX PRO 6000' to nvidia-rtx-pro-6000"),
    pytest.param("gke", "rtx-pro-6000", ["nvidia-rtx-pro-6000"], id="GKE"),
    pytest.param("eks-karpenter", "rtx-pro-6000", ["rtx-pro-6000"], id="Karpenter (AWS)"),
    pytest.param("aks", "rtx-pro-6000", ["RTX-PRO-6000"], id="AKS"),
])
def test_what_each_platform_labels(label: str, type_id: str, expected: list[str]) -> None:
    assert product_values(type_id, label=label) == expected


def test_a_type_whose_only_product_name_is_too_long_gets_no_affinity_and_a_warning() -> None:
    # 7 + 57 = 64 characters: one more than a label value holds
    long_name = "NVIDIA-" + "X" * 57
    config = {"accelerators": [{"id": "xgpu", "family": "xgpu", "memoryMiB": 16384,
                                "price": 1.0, "protected": False, "aliases": [long_name]}],
              "admission": {"platformMapping": {"typeLabel": "gfd"}}}
    webhook = PodAdmission(build_platform(load_config_text(yaml.safe_dump(config))))
    pod = make_pod("p").gpus(1).accelerator("xgpu").obj()
    mutated = webhook.mutate(review(pod))
    assert all("affinity" not in str(op["path"]) for op in mutated.patch)
    assert webhook.validate(review(pod)).warnings == (
        f"gpu-extender: no node affinity written: xgpu has no value on label {PRODUCT} "
        f"({long_name!r}, {long_name + '-SHARED'!r} cannot be a label value: at most 63 "
        f"characters of [A-Za-z0-9-_.], beginning and ending alphanumeric); autoscalers "
        f"cannot tell which nodes fit (add admission.platformMapping.gpuTypes entries)",)


def test_a_mig_suffix_that_makes_a_product_too_long_is_left_out() -> None:
    # single strategy appends -MIG-<profile>: 51 + len("-MIG-1g.10gb") = 63 fits, 52 + 12 = 64
    # does not (the bare product, a mixed-strategy node, is still written)
    fits, too_long = "NVIDIA-" + "A" * 44, "NVIDIA-" + "B" * 45
    config = {"accelerators": [{"id": "a100-80gb", "aliases": [fits, too_long]}],
              "admission": {"platformMapping": {"typeLabel": "gfd"}}}
    platform = build_platform(load_config_text(yaml.safe_dump(config)))
    request = platform.pods.request(make_pod("p").mig("1g.10gb", 1).accelerator("a100-80gb")
                                    .obj())
    assert request is not None
    mapped = PodAdmission(platform).mapping.for_request(request)
    values = [v for g in mapped.groups for e in g for v in e.get("values", ())]
    assert [v for v in values if v.startswith((fits, too_long))] == \
        [fits, f"{fits}-MIG-1g.10gb", too_long]
    assert mapped.skipped == (f"{too_long}-MIG-1g.10gb",)
