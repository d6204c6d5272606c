"""Reason messages that name what the pod asked for, so a person can act on them."""

from __future__ import annotations

import numpy as np

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
    assert format_reason_for(platform.catalog, request, Reason.TOO_FEW_GPUS, 1, 0, 2) == \
        "node has 1 GPU(s) of accepted types; the pod needs 2 distinct GPUs"


def test_a_node_time_sliced_under_gpu_shared_says_so_to_an_nvidia_gpu_pod(
        platform: Platform) -> None:
    # GFD with renameByDefault: the node advertises only nvidia.com/gpu.shared
    node = {"metadata": {"name": "l4-shared", "labels": {
                "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "4",
                "nvidia.com/gpu.count": "1"}},
            "status": {"allocatable": {"nvidia.com/gpu.shared": "4"}}}
    from extender.core.fit import fit
    from extender.inventory.store import Inventory
    inventory = Inventory(platform.catalog)
    inventory.upsert_node(platform.nodes.decode(node))
    pod = {"metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    request = platform.pods.request(pod)
    assert request is not None
    snapshot = inventory.snapshot()
    result = fit(snapshot, platform.placement_request(request), np.array([0]))
    code, params = int(result.code[0]), [int(x) for x in result.params[0]]
    assert code == Reason.TOO_FEW_GPUS
    assert format_reason_for(platform.catalog, request, code, *params) == (
        "node's accepted GPUs are time-sliced under nvidia.com/gpu.shared; the pod asks "
        "nvidia.com/gpu (ask nvidia.com/gpu.shared: 1 for a replica)")
