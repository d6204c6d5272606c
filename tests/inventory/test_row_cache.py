"""The per-row cache the kernels keep across snapshots of one inventory."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.inventory import ClusterSnapshot
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from tests.core.helpers import gpu, inventory, node


class Counting:
    """A row function that records which rows it was asked for."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __call__(self, snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                 ) -> tuple[npt.NDArray[np.int64], ...]:
        self.calls.append([int(r) for r in rows])
        return (snapshot.free_mib[rows].astype(np.int64).sum(axis=1),)


def whole(node_name: str, index: int) -> Assignment:
    return Assignment(node_name, RequestKind.WHOLE, (GpuGrant(index, 16384, whole=True),))


def test_only_rows_that_changed_are_recomputed() -> None:
    inv = inventory(node("a", "t4", 2), node("b", "t4", 2), node("c", "t4", 2))
    compute = Counting()
    rows = np.arange(3, dtype=np.int64)
    first = inv.snapshot()
    assert first.cache.derive("free", first, compute, rows)[0].tolist() == [32768] * 3
    assert compute.calls == [[0, 1, 2]]  # cold: every row
    inv.assume(PodKey("ns", "p", "p"), whole("b", 0))  # row 1 changes
    second = inv.snapshot()
    assert second.cache.derive("free", second, compute, rows)[0].tolist() == [32768, 16384,
                                                                              32768]
    assert compute.calls[-1] == [1]
    assert second.cache.derive("free", second, compute, rows)[0].tolist()[1] == 16384
    assert compute.calls[-1] == [1]  # nothing changed since: no call


def test_an_older_snapshot_read_after_a_newer_one_gets_its_own_values() -> None:
    inv = inventory(node("a", "t4", 1))
    old = inv.snapshot()
    inv.assume(PodKey("ns", "p", "p"), whole("a", 0))
    new = inv.snapshot()
    compute = Counting()
    rows = np.zeros(1, dtype=np.int64)
    assert new.cache.derive("free", new, compute, rows)[0].tolist() == [0]
    assert old.cache.derive("free", old, compute, rows)[0].tolist() == [16384]
    assert new.cache.derive("free", new, compute, rows)[0].tolist() == [0]


def test_added_nodes_and_wider_nodes_are_picked_up() -> None:
    inv = inventory(node("a", "t4", 1))
    compute = Counting()
    snap = inv.snapshot()
    snap.cache.derive("free", snap, compute, np.arange(1))
    inv.upsert_node(node("b", "t4", 2))
    snap = inv.snapshot()
    got = snap.cache.derive("free", snap, compute, np.arange(2))[0].tolist()
    assert got == [16384, 32768]
    assert compute.calls[-1] == [1]  # only the new row
    inv.upsert_node(node("wide", gpus=[gpu("t4", i) for i in range(12)]))
    snap = inv.snapshot()
    got = snap.cache.derive("free", snap, compute, np.arange(3))[0].tolist()
    assert got == [16384, 32768, 12 * 16384]
    assert compute.calls[-1] == [0, 1, 2]  # the arrays widened: everything again


def test_returned_arrays_are_copies() -> None:
    inv = inventory(node("a", "t4", 1))
    snap = inv.snapshot()
    compute = Counting()
    (out,) = snap.cache.derive("free", snap, compute, np.arange(1))
    out[0] = -1
    assert snap.cache.derive("free", snap, compute, np.arange(1))[0].tolist() == [16384]
