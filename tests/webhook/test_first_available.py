"""/mutate rewrites untyped GPU claims into cost-ordered ``firstAvailable`` alternatives
(``webhook/first_available.py``), behind ``--dra-first-available``."""

from __future__ import annotations

from typing import Any

import pytest

from extender.platform import load_platform
from extender.webhook.admit import PodAdmission
from extender.webhook.first_available import cost_order, product_selector
from extender.webhook.review import AdmissionRequest
from tests.webhook.helpers import apply


def template(**exactly: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", **exactly}}]}}}}


def claim_review(obj: dict[str, Any]) -> AdmissionRequest:
    return AdmissionRequest(uid="u", kind=obj["kind"], namespace="ml", operation="CREATE",
                            object=obj)


def test_an_untyped_claim_template_becomes_cheapest_first_alternatives() -> None:
    platform = load_platform()
    answer = PodAdmission(platform, first_available=True).mutate(claim_review(
        template(count=2)))
    assert answer.outcome == "patched"
    result = apply(template(count=2), list(answer.patch))
    request, = result["spec"]["spec"]["devices"]["requests"]
    assert "exactly" not in request
    names = [alternative["name"] for alternative in request["firstAvailable"]]
    # unprotected types by price: t4 (0.53 $/h) before l4 (0.80) ...; never a100/h100
    assert names[:2] == ["t4", "l4"] and len(names) <= 8
    assert not {"a100-80gb", "h100-80gb"} & set(names)
    assert all(a["count"] == 2 for a in request["firstAvailable"])


@pytest.mark.parametrize("exactly", [
    {"selectors": [{"cel": {"expression": "true"}}]},  # the user chose
    {"allocationMode": "All"},
    {"adminAccess": True},
    {"deviceClassName": "other.example.com"},
])
def test_typed_or_special_requests_are_left_as_written(exactly: dict[str, Any]) -> None:
    answer = PodAdmission(load_platform(), first_available=True).mutate(claim_review(
        template(**exactly)))
    assert answer.outcome == "unchanged" and answer.patch == ()


def test_without_the_switch_claims_are_not_touched() -> None:
    answer = PodAdmission(load_platform()).mutate(claim_review(template()))
    assert answer.patch == ()


def test_the_selector_matches_the_names_the_catalog_knows() -> None:
    catalog = load_platform().catalog
    t4 = catalog.resolve_node_type("t4")
    assert t4 is not None
    expression = product_selector(catalog, t4)
    # "Tesla T4" as NVML/the DRA driver says it -> lower, spaces to dashes -> "tesla-t4"
    assert '"tesla-t4"' in expression and ".lowerAscii()" in expression
    assert cost_order(catalog, load_platform().protection.protected)[0] == t4
