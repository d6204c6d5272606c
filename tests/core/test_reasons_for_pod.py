"""Reason messages that name what the pod asked for, so a person can act on them."""

from __future__ import annotations

from extender.core.reasons import Reason, format_reason_for
from extender.platform import Platform


def test_a_type_mismatch_names_the_accepted_types_and_where_they_were_asked(
        platform: Platform) -> None:
    pod = {"metadata": {"name": "p", "labels": {"gpu-extender.io/accelerator": "a100-80gb"}},
           "spec": {"containers": [{"name": "c",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    request = platform.pods.request(pod)
    assert request is not None
    t4 = platform.catalog.index_of("t4")
    assert format_reason_for(platform.catalog, request, Reason.TYPE_MISMATCH, t4, t4) == (
        "node has t4 GPUs; the pod accepts a100-80gb only "
        "(label gpu-extender.io/accelerator)")


def test_other_codes_keep_their_message(platform: Platform) -> None:
    pod = {"metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c",
                                    "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}
    request = platform.pods.request(pod)
    assert request is not None
    assert format_reason_for(platform.catalog, request, Reason.TOO_FEW_GPUS, 1, 2) == \
        "node has 1 GPU(s) of accepted types; the pod needs 2 distinct GPUs"
