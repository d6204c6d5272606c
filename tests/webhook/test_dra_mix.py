"""/validate refuses pods mixing a DRA-mapped extended resource with an extender-only one
(``webhook/dra_mix.py``): kube-scheduler would find no node for them."""

from __future__ import annotations

from typing import Any

import pytest

from extender.platform import load_platform
from extender.webhook.admit import PodAdmission
from tests.builders import make_pod
from tests.webhook.helpers import review

DRA = frozenset({"nvidia.com/gpu"})


@pytest.mark.parametrize(("pod", "dra_mapped", "refused"), [
    # HAMi's form: nvidia.com/gpu with nvidia.com/gpumem; DRA maps nvidia.com/gpu
    (make_pod("p").container(limits={"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}),
     DRA, True),
    # the same pod where no DeviceClass maps nvidia.com/gpu: a VRAM share, fine
    (make_pod("p").container(limits={"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}),
     frozenset(), False),
    # whole GPUs alone, or a share alone: fine
    (make_pod("p").gpus(2), DRA, False),
    (make_pod("p").gpu_memory("4Gi"), DRA, False),
])
def test_a_dra_mapped_resource_with_an_extender_only_one_is_refused(
        pod: Any, dra_mapped: frozenset[str], refused: bool) -> None:
    answer = PodAdmission(load_platform(), dra_mapped=dra_mapped).validate(review(pod.obj()))
    assert answer.allowed is not refused
    if refused:
        assert "nvidia.com/gpu" in answer.message and "nvidia.com/gpumem" in answer.message
        assert "Ask for whole GPUs alone" in answer.message  # says what to write
