"""The share capacity published into node status (``core/capacity.py``,
``sync/node_capacity.py``): the figures, patching only what changed, following the inventory."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from extender.apiserver.errors import Unavailable
from extender.core.capacity import ShareCapacity, share_capacity
from extender.sync.node_capacity import CapacityPublisher
from tests.core.helpers import gpu, inventory, node

GIB_BYTES = 1 << 30


class Writer:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    def patch_node_status(self, node: str, status: Any) -> None:
        if self.fail:
            raise Unavailable("patch: 503")
        self.patches.append((node, dict(status)))


def test_figures() -> None:
    # l4: 2 x 24 GiB = 48 GiB, 2000 milli; a100-mig: its one GPU is partitioned -> 0;
    # mixed: a T4 (16 GiB) healthy + a T4 unhealthy -> 16 GiB, 1000; cpu: no GPU, absent
    inv = inventory(node("l4", "l4", 2),
                    node("a100-mig", gpus=[gpu("a100-80gb", 0, mig="dynamic")]),
                    node("mixed", gpus=[gpu("t4", 0), gpu("t4", 1, healthy=False)]),
                    node("cpu", count=0))
    assert share_capacity(inv.snapshot()) == {
        "l4": ShareCapacity(48 * GIB_BYTES, 2000),
        "a100-mig": ShareCapacity(0, 0),
        "mixed": ShareCapacity(16 * GIB_BYTES, 1000)}
    assert ShareCapacity(16 * GIB_BYTES, 1000).quantities() == {
        "gpu-extender.io/gpu-memory": str(16 * GIB_BYTES), "gpu-extender.io/gpu-milli": "1000"}


def test_publishes_changes_only_and_follows_health() -> None:
    info = node("n1", "t4", 2)
    inv = inventory(info)
    writer = Writer()
    publisher = CapacityPublisher(inv, writer)
    assert publisher.publish() == 0  # not synced: nothing is true yet
    inv.mark_synced()
    assert publisher.publish() == 1
    quantities = {"gpu-extender.io/gpu-memory": str(32 * GIB_BYTES),
                  "gpu-extender.io/gpu-milli": "2000"}
    assert writer.patches == [("n1", {"capacity": quantities, "allocatable": quantities})]
    assert publisher.publish() == 0  # nothing changed
    # GPU 1 goes unhealthy: 16 GiB, 1000 milli
    inv.upsert_node(replace(info, gpus=(info.gpus[0], replace(info.gpus[1], healthy=False))))
    assert publisher.publish() == 1
    assert writer.patches[-1][1]["capacity"]["gpu-extender.io/gpu-milli"] == "1000"


def test_failed_patch_is_retried() -> None:
    inv = inventory(node("n1", "t4", 1))
    inv.mark_synced()
    writer = Writer()
    writer.fail = True
    publisher = CapacityPublisher(inv, writer)
    assert publisher.publish() == 0 and publisher.failures_total == 1
    writer.fail = False
    assert publisher.publish() == 1


def test_resync_writes_again() -> None:
    now = [0.0]
    inv = inventory(node("n1", "t4", 1))
    inv.mark_synced()
    writer = Writer()
    publisher = CapacityPublisher(inv, writer, resync_s=60, clock=lambda: now[0])
    assert publisher.publish() == 1
    now[0] = 61.0
    assert publisher.publish() == 1  # someone may have changed it: written again


def test_only_the_leader_publishes() -> None:
    inv = inventory(node("n1", "t4", 1))
    inv.mark_synced()
    writer = Writer()
    leading = [False]
    publisher = CapacityPublisher(inv, writer, leader=lambda: leading[0])
    assert publisher.publish() == 0 and writer.patches == []
    leading[0] = True
    assert publisher.publish() == 1
    leading[0] = False
    assert publisher.publish() == 0
    leading[0] = True
    assert publisher.publish() == 1  # a new term writes every node again
