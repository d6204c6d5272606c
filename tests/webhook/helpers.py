"""Webhook unit-test helpers: platforms built from small admission configs."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from extender.config import load_config_text
from extender.platform import Platform, build_platform
from extender.webhook.admit import PodAdmission
from extender.webhook.review import AdmissionRequest

FLYTE_DEVICE = "k8s.amazonaws.com/accelerator"


def admission(**mapping: Any) -> PodAdmission:
    """A PodAdmission whose ``admission.platformMapping`` is ``mapping`` (other defaults)."""
    return PodAdmission(platform_with({"platformMapping": mapping}))


def platform_with(admission_section: dict[str, Any]) -> Platform:
    config = {"nodeLabels": {"presets": ["gfd", "gke", "eks-karpenter", "aks"],
                             "custom": [{"key": FLYTE_DEVICE}]},
              "admission": admission_section}
    return build_platform(load_config_text(yaml.safe_dump(config)))


def review(pod: dict[str, Any], operation: str = "CREATE") -> AdmissionRequest:
    return AdmissionRequest(uid="uid-1", kind="Pod", namespace="ml", operation=operation,
                            object=pod)


def apply(pod: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A minimal RFC 6902 add/replace applier (all the webhook emits)."""
    out = copy.deepcopy(pod)
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~")
                          for p in op["path"].lstrip("/").split("/")]
        target: Any = out
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            if last == "-":
                target.append(op["value"])
            else:
                target[int(last)] = op["value"]
        else:
            assert op["op"] == "replace" or last not in target, op
            target[last] = op["value"]
    return out
