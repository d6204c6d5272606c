"""A bound pod's status reports on the pod watch (``sync/status_reports.py``): the decode and the
claims kept from the pod's last decode when only what the decoder does not read changed,
decoded in full otherwise; either way the same books as the full decode."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from extender.inventory.store import Inventory
from extender.model import ANNOTATION_OBSERVED
from extender.platform import Platform
from extender.sync.apply import InventoryApplier
from extender.sync.status_reports import Seen, SeenPods
from extender.sync.trust import claims_of
from tests.sync.test_binding_echo import (
    JSON,
    UID,
    _bind_through,
    _deep,
    _set,
    assignment,
    binding_echo,
    setup,
    unbound_pod,
)


def running(pod: JSON, version: str = "102") -> JSON:
    """The kubelet's report on a bound pod: the phase, conditions, IPs, container states."""
    report = copy.deepcopy(pod)
    report["metadata"]["resourceVersion"] = version
    report["metadata"]["managedFields"].append({"manager": "kubelet", "operation": "Update",
                                                "subresource": "status"})
    report["status"] = {
        "phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.0.0.7",
        "startTime": "2026-12-06T10:00:00Z", "qosClass": "BestEffort",
        "conditions": [{"type": kind, "status": "True"}
                       for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                               "state": {"running": {"startedAt": "2026-12-06T10:00:01Z"}}}]}
    return report


def bound_pod() -> JSON:
    return running(binding_echo(unbound_pod()), version="101")


# Each: a change in a report that the decoder or the claims read, or that the shape check
# refuses: decoded in full.
NOT_A_STATUS_REPORT: dict[str, Callable[[JSON], None]] = {
    "a label changed": _set(("metadata", "labels", "app"), "serve"),
    "an annotation changed": _set(("metadata", "annotations", "team"), "nlp"),
    "the node agent's correction": _set(("metadata", "annotations", ANNOTATION_OBSERVED),
                                        "{not json"),
    "the GPU request resized": _set(("spec", "containers", 0, "resources"),
                                    {"limits": {"nvidia.com/gpu": "1"}}),
    "a new spec field": _set(("spec", "priority"), 7),
    "the pod finished": _set(("status", "phase"), "Succeeded"),
    "the phase is not a string": _set(("status", "phase"), 3),
    "the uid changed (a new pod)": _set(("metadata", "uid"), "uid-other"),
    "a new top-level field": _set(("extra",), {}),
    "the resource version is not a string": _set(("metadata", "resourceVersion"), 102),
    "status nested past the shape limit": _set(("status", "conditions"), _deep(70)),
    "managed fields nested past the shape limit": _set(("metadata", "managedFields"),
                                                       _deep(70)),
    "status is not an object": _set(("status",), ["Running"]),
}


def test_a_status_report_reuses_the_decode_and_the_claims(platform: Platform) -> None:
    seen = SeenPods()
    bound = bound_pod()
    info = platform.pods.decode(bound)
    claims = claims_of(bound["metadata"]["annotations"])
    seen.keep(seen.digest(bound), info, claims)
    report = running(bound, version="103")
    report["status"]["conditions"][1]["status"] = "False"  # not ready any more
    found = seen.lookup(report)
    assert found.info is info and found.claims is claims and seen.hits == 1
    assert found.info == platform.pods.decode(report)
    assert found.claims == claims_of(report["metadata"]["annotations"])


@pytest.mark.parametrize("change", NOT_A_STATUS_REPORT.values(),
                         ids=NOT_A_STATUS_REPORT.keys())
def test_anything_the_decoder_reads_is_decoded_in_full(platform: Platform,
                                                       change: Callable[[JSON], None]) -> None:
    seen = SeenPods()
    bound = bound_pod()
    seen.keep(seen.digest(bound), platform.pods.decode(bound),
              claims_of(bound["metadata"]["annotations"]))
    report = running(bound, version="103")
    change(report)
    assert seen.lookup(report).info is None and seen.hits == 0


def test_only_a_clean_decode_of_a_bound_running_pod_is_kept(platform: Platform) -> None:
    seen = SeenPods()
    pending = unbound_pod()
    seen.keep(seen.digest(pending), platform.pods.decode(pending), claims_of({}))
    finished = bound_pod()
    finished["status"]["phase"] = "Failed"
    seen.keep(seen.digest(finished), platform.pods.decode(finished), claims_of({}))
    broken = bound_pod()
    broken["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "many"}}
    seen.keep(seen.digest(broken), platform.pods.decode(broken), claims_of({}))
    assert len(seen) == 0


def _books(inventory: Inventory, applier: InventoryApplier, placed: list[Any]) -> tuple[Any, ...]:
    holdings = sorted((h.key.uid, h.node, h.state, h.assignment, h.cpu_milli, h.memory_mib)
                      for h in inventory.holdings())
    return (holdings, inventory.snapshot().pods.tolist(), applier.untrusted_total,
            applier.inferred_total, len(placed), applier.pod_facts.get(UID))


@pytest.mark.parametrize("change", [None, *NOT_A_STATUS_REPORT.values()],
                         ids=["the report alone", *NOT_A_STATUS_REPORT.keys()])
def test_the_books_are_the_full_decodes_on_either_path(
        platform: Platform, change: Callable[[JSON], None] | None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two appliers see the same events (the pod pending, its Binding's echo, a report); one
    reuses kept decodes, the other never finds one: the books agree after every event."""
    results = []
    for reuse in (True, False):
        inventory, applier = setup(platform)
        if not reuse:
            monkeypatch.setattr(applier.seen, "lookup", lambda pod: Seen(SeenPods.digest(pod)))
        placed: list[Any] = []
        applier.on_placed = placed.append
        pending = unbound_pod()
        applier.pod_event("ADDED", pending)
        _bind_through(inventory, assignment(0, 1))
        echo = binding_echo(pending)
        applier.pod_event("MODIFIED", echo)
        report = running(echo)
        if change is not None:
            change(report)
        applier.pod_event("MODIFIED", report)
        again = running(echo, version="104")  # a second report, as the kubelet sends
        applier.pod_event("MODIFIED", again)
        if reuse:  # Pending -> Running reuses the echo's decode, and again on a second report
            # (a changed report is decoded in full, and the second then differs from it; a
            # report of another pod leaves this pod's decode kept for the second)
            other_pod = change is NOT_A_STATUS_REPORT["the uid changed (a new pod)"]
            assert applier.seen.hits == (2 if change is None else 1 if other_pod else 0)
        results.append(_books(inventory, applier, placed))
    assert results[0] == results[1]


def test_relists_deletions_and_unbinding_drop_what_is_kept(platform: Platform) -> None:
    inventory, applier = setup(platform)
    _bind_through(inventory, assignment(0, 1))
    applier.pod_event("MODIFIED", bound_pod())
    assert len(applier.seen) == 1
    applier.pod_event("DELETED", bound_pod())
    assert len(applier.seen) == 0
    applier.pod_event("MODIFIED", bound_pod())
    assert len(applier.seen) == 1
    applier.replace_pods([bound_pod()])
    assert len(applier.seen) == 0
    applier.pod_event("MODIFIED", bound_pod())
    applier.pod_event("MODIFIED", unbound_pod())  # recreated, pending again
    assert len(applier.seen) == 0
