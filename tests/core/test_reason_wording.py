"""kube-scheduler writes a pending pod's event as "0/N nodes are available: <count> <message>,
...": every reason message starts with "node" (or kube's own "insufficient"), so the count
reads "1 node has 1/4 accepted GPUs in use; ...", never "1 1/4 accepted GPUs in use"."""

from __future__ import annotations

import pytest

from extender.core.reasons import Reason, format_reason, format_reason_for
from extender.platform import Platform

OPENINGS = ("node ", "node's ", "insufficient ")


@pytest.mark.parametrize("code", [r for r in Reason if r is not Reason.FITS],
                         ids=lambda r: r.name.lower())
def test_every_message_starts_with_the_node_so_a_count_before_it_reads(
        platform: Platform, code: Reason) -> None:
    t4 = platform.catalog.index_of("t4")
    # have 1 of among 4 (t4 for the type reasons), need 2: "1/4 accepted GPUs in use; ... 2 free"
    message = format_reason(platform.catalog, code, t4 if code == Reason.PROTECTED else 1,
                            t4 if code == Reason.PROTECTED else 4, 2)
    assert message.startswith(OPENINGS), message
    assert not f"1 {message}"[2].isdigit()


def test_the_busy_gpus_message_after_kube_schedulers_count(platform: Platform) -> None:
    # 1 GPU of 4 in use, the pod needs 4: the demo's pending line
    message = format_reason(platform.catalog, Reason.GPUS_BUSY, 1, 4, 4)
    assert f"0/4 nodes are available: 1 {message}." == (
        "0/4 nodes are available: 1 node has 1/4 accepted GPUs in use; the pod needs 4 free.")


@pytest.mark.parametrize("code", [Reason.TYPE_MISMATCH, Reason.TOO_FEW_GPUS],
                         ids=lambda r: r.name.lower())
def test_the_messages_naming_the_pods_request_start_with_the_node_too(
        platform: Platform, code: Reason) -> None:
    pod = {"metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c",
                                    "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}
    request = platform.pods.request(pod)
    assert request is not None
    t4 = platform.catalog.index_of("t4")
    # have 0 GPUs of the accepted types (the time-sliced wording), need 2
    params = (t4, t4, 0) if code == Reason.TYPE_MISMATCH else (0, 0, 2)
    assert format_reason_for(platform.catalog, request, code, *params).startswith(OPENINGS)
