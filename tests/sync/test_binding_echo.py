"""A Binding's echo on the pod watch (``sync/echo.py``): read from the pod's unbound version when
the only changes are a Binding's, decoded in full otherwise; either way the same ``PodInfo``
and the same books as the full decode."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from extender.apiserver.binder import assignment_annotations
from extender.inventory.store import HoldingState, Inventory
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_OBSERVED,
    Assignment,
    GpuGrant,
    PodKey,
    RequestKind,
)
from extender.platform import Platform
from extender.sync.apply import InventoryApplier
from extender.sync.echo import UnboundPods
from extender.sync.trust import claims_of
from tests.builders import make_pod
from tests.sync.clusters import l4_node

JSON = dict[str, Any]
UID = "uid-ml-p"
KEY = PodKey("ml", "p", UID)


def unbound_pod() -> JSON:
    """A pending pod as the API server sends it (bookkeeping fields included)."""
    pod = make_pod("p").namespace("ml").uid(UID).gpus(2).label("app", "train") \
        .annotation("team", "vision").obj()
    pod["metadata"]["resourceVersion"] = "100"
    pod["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update",
                                         "fieldsV1": {"f:spec": {"f:containers": {}}}}]
    pod["spec"]["schedulerName"] = "gpu-scheduler"
    pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    return pod


def assignment(*indices: int, node: str = "n1") -> Assignment:
    return Assignment(node, RequestKind.WHOLE,
                      tuple(GpuGrant(i, 23034, whole=True) for i in indices), "l4")


def binding_echo(pod: JSON, node: str = "n1", placed: Assignment | None = None) -> JSON:
    """``pod`` after the extender's Binding: node, annotations, and the API's bookkeeping."""
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = node
    bound["metadata"]["annotations"] = {**bound["metadata"].get("annotations", {}),
                                        **assignment_annotations(placed or assignment(0, 1))}
    bound["metadata"]["resourceVersion"] = "101"
    bound["metadata"]["managedFields"].append({"manager": "kube-scheduler",
                                               "operation": "Update", "subresource": "binding"})
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    return bound


def _set(path: tuple[str | int, ...], value: object) -> Callable[[JSON], None]:
    def change(pod: JSON) -> None:
        part: Any = pod
        for key in path[:-1]:
            part = part[key] if isinstance(key, int) else part.setdefault(key, {})
        part[path[-1]] = value
    return change


def _deep(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


# Each: a change beside the Binding (or of what it wrote) that must be decoded in full.
NOT_A_BINDING: dict[str, Callable[[JSON], None]] = {
    "a label changed": _set(("metadata", "labels", "app"), "serve"),
    "another annotation added": _set(("metadata", "annotations", "x"), "y"),
    "another annotation changed": _set(("metadata", "annotations", "team"), "nlp"),
    "the GPU request resized": _set(("spec", "containers", 0, "resources"),
                                    {"limits": {"nvidia.com/gpu": "1"}}),
    "a new spec field": _set(("spec", "priority"), 7),
    "the phase moved": _set(("status", "phase"), "Running"),
    "a status field beside conditions": _set(("status", "hostIP"), "10.0.0.1"),
    "the uid changed (a new pod)": _set(("metadata", "uid"), "uid-other"),
    "a new top-level field": _set(("extra",), {}),
    "our annotation is not a string": _set(("metadata", "annotations", ANNOTATION_ASSIGNED),
                                           7),
    "our annotation is malformed": _set(("metadata", "annotations", ANNOTATION_ASSIGNED),
                                        "{not json"),
    "the node name is not a string": _set(("spec", "nodeName"), 3),
    "conditions nested past the shape limit": _set(("status", "conditions"), _deep(70)),
}


def test_the_echo_of_a_binding_is_read_from_the_unbound_decode(platform: Platform) -> None:
    pods = UnboundPods()
    pending = unbound_pod()
    pods.keep(pending, platform.pods.decode(pending))
    bound = binding_echo(pending)
    echo = pods.bound(bound)
    assert echo is not None and pods.hits == 1
    read = echo.info
    assert read == platform.pods.decode(bound)
    assert read.node_name == "n1" and read.assignment == assignment(0, 1)
    assert echo.claims == claims_of(bound["metadata"]["annotations"])
    assert len(pods) == 0  # dropped once used
    assert pods.bound(bound) is None  # nothing kept any more: decode in full


def test_a_correction_wins_over_the_assignment_as_in_the_decoder(platform: Platform) -> None:
    pods = UnboundPods()
    pending = unbound_pod()
    pods.keep(pending, platform.pods.decode(pending))
    bound = binding_echo(pending)
    bound["metadata"]["annotations"][ANNOTATION_OBSERVED] = \
        assignment_annotations(assignment(2, 3))[ANNOTATION_ASSIGNED]
    echo = pods.bound(bound)
    assert echo is not None and echo.info == platform.pods.decode(bound)
    assert echo.info.assignment == assignment(2, 3)
    assert echo.claims is None  # with a correction: read by claims_of, as before


@pytest.mark.parametrize("change", NOT_A_BINDING.values(), ids=NOT_A_BINDING.keys())
def test_anything_beside_a_binding_is_decoded_in_full(platform: Platform,
                                                      change: Callable[[JSON], None]) -> None:
    pods = UnboundPods()
    pending = unbound_pod()
    pods.keep(pending, platform.pods.decode(pending))
    bound = binding_echo(pending)
    change(bound)
    assert pods.bound(bound) is None and pods.hits == 0


def test_a_pod_with_problems_is_not_kept(platform: Platform) -> None:
    pods = UnboundPods()
    pending = unbound_pod()
    pending["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "many"}}
    info = platform.pods.decode(pending)
    assert info.problems
    pods.keep(pending, info)
    assert len(pods) == 0 and pods.bound(binding_echo(pending)) is None


def setup(platform: Platform) -> tuple[Inventory, InventoryApplier]:
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    applier.replace_nodes([l4_node("n1"), l4_node("n2")])
    return inventory, applier


def _bind_through(inventory: Inventory, placed: Assignment) -> None:
    """What the bind path leaves in the books: our hold, then the Binding done."""
    inventory.assume(KEY, placed, ttl=None)
    inventory.finish_binding(UID)


@pytest.mark.parametrize("change", [None, *NOT_A_BINDING.values()],
                         ids=["the binding alone", *NOT_A_BINDING.keys()])
def test_the_books_are_the_full_decodes_on_either_path(platform: Platform,
                                                       change: Callable[[JSON], None] | None
                                                       ) -> None:
    """One applier saw the pod pending (so it may read the echo), the other did not (so it
    decodes in full): the holdings, the trust counters and the placed pods agree."""
    results = []
    for saw_pending in (True, False):
        inventory, applier = setup(platform)
        placed_pods: list[Any] = []
        applier.on_placed = placed_pods.append
        pending = unbound_pod()
        if saw_pending:
            applier.pod_event("ADDED", pending)
        _bind_through(inventory, assignment(0, 1))
        bound = binding_echo(pending)
        if change is not None:
            change(bound)
        applier.pod_event("MODIFIED", bound)
        if saw_pending:
            assert applier.unbound.hits == (1 if change is None else 0)
        holdings = sorted((h.key.uid, h.node, h.state, h.assignment, h.cpu_milli,
                           h.memory_mib) for h in inventory.holdings())
        snapshot = inventory.snapshot()
        results.append((holdings, snapshot.pods.tolist(), applier.untrusted_total,
                        applier.inferred_total, placed_pods, applier.pod_facts.get(UID)))
    assert results[0] == results[1]


def test_a_tampered_assignment_is_still_not_trusted_on_the_fast_path(
        platform: Platform) -> None:
    """The owner rewrote ``assigned`` between our Binding and its echo (another value than we
    wrote): the echo is read without a decode, and the trust rules still keep our own
    Binding's GPUs (``sync/trust.py``)."""
    inventory, applier = setup(platform)
    pending = unbound_pod()
    applier.pod_event("ADDED", pending)
    _bind_through(inventory, assignment(0, 1))
    bound = binding_echo(pending, placed=assignment(2, 3))  # not what the bind held
    applier.pod_event("MODIFIED", bound)
    assert applier.unbound.hits == 1
    holding = inventory.holding(UID)
    assert holding is not None and holding.state is HoldingState.OBSERVED
    assert holding.assignment == assignment(0, 1)


def test_relists_deletions_and_terminal_pods_drop_what_is_kept(platform: Platform) -> None:
    _, applier = setup(platform)
    applier.pod_event("ADDED", unbound_pod())
    assert len(applier.unbound) == 1
    applier.pod_event("DELETED", unbound_pod())
    assert len(applier.unbound) == 0
    applier.replace_pods([unbound_pod()])
    assert len(applier.unbound) == 1
    finished = unbound_pod()
    finished["status"]["phase"] = "Failed"
    applier.pod_event("MODIFIED", finished)
    assert len(applier.unbound) == 0
    applier.replace_pods([])
    assert len(applier.unbound) == 0
