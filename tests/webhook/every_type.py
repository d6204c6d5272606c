"""Every shipped catalog type, asked for in every amount form, mutated by the webhook under
every type label it can write: the pods whose node affinity and tolerations must hold only
values the API server takes (``test_mapping_label_values.py``, and the server-side dry run in
``tests/e2e/test_webhook_label_values.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from extender.catalog import AcceleratorType
from extender.config import load_config_text
from extender.platform import Platform, build_platform
from extender.webhook.admit import PodAdmission
from tests.builders import PodBuilder, make_pod
from tests.webhook.helpers import apply, review

CUSTOM_KEY = "example.com/gpu-model"
TYPE_LABELS = ("gfd", "gke", "eks-karpenter", "aks", "flyte", CUSTOM_KEY)


def platform_for(type_label: str) -> Platform:
    """``typeLabel`` and partition tolerations on (every value the mapping can write)."""
    config = {"nodeLabels": {"presets": ["gfd", "gke", "eks-karpenter", "aks", "flyte"],
                             "custom": [{"key": CUSTOM_KEY}]},
              "admission": {"platformMapping": {"typeLabel": type_label,
                                                "partitions": {"tolerate": True}}}}
    return build_platform(load_config_text(yaml.safe_dump(config)))


def _requests(accel: AcceleratorType) -> Iterator[tuple[str, PodBuilder]]:
    name = accel.id.replace(".", "-")
    yield "whole", make_pod(f"{name}-whole").gpus(1).accelerator(accel.id)
    yield "vram", make_pod(f"{name}-vram").gpu_memory("4Gi").accelerator(accel.id)
    yield "shared", make_pod(f"{name}-shared").shared_gpus(1).accelerator(accel.id)
    for profile in accel.mig.profiles if accel.mig is not None else ():
        yield (f"mig-{profile.name}",
               make_pod(f"{name}-mig-{profile.name.replace('.', '-')}")
               .mig(profile.name, 1).accelerator(accel.id))


def mutated_pods() -> Iterator[tuple[str, dict[str, Any]]]:
    """``(case id, the pod as the webhook's patch leaves it)`` for every type label, type and
    form."""
    for type_label in TYPE_LABELS:
        platform = platform_for(type_label)
        webhook = PodAdmission(platform)
        for accel in platform.catalog.types:
            for form, builder in _requests(accel):
                pod = builder.obj()
                pod["spec"].setdefault("schedulerName", "default-scheduler")
                answer = webhook.mutate(review(pod))
                assert answer.allowed, (type_label, accel.id, form, answer.message)
                yield f"{type_label}:{accel.id}:{form}", apply(pod, list(answer.patch))
