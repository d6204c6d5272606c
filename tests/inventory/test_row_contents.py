"""What a row *is* (``ClusterSnapshot.row_contents``), and the per-row cache's lookup by it:
a pool of identical nodes goes through the same few states, so the second node to reach a
state costs a lookup, not a kernel run (issue 22)."""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from extender.inventory import ClusterSnapshot
from extender.inventory.snapshot import CONTENT_ROWS, ROW_ARRAYS
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from tests.core.helpers import gpu, inventory, node


class Counting:
    """A row function of the row's content alone, recording the rows it computed."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __call__(self, snapshot: ClusterSnapshot, rows: npt.NDArray[np.int64]
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        self.calls.append([int(r) for r in rows])
        return (snapshot.free_mib[rows].astype(np.int64).sum(axis=1),
                snapshot.free_mib[rows].copy())


def whole(node_name: str, index: int) -> Assignment:
    return Assignment(node_name, RequestKind.WHOLE, (GpuGrant(index, 16384, whole=True),))


def rows(*values: int) -> npt.NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def test_every_per_node_array_of_the_snapshot_is_part_of_a_rows_content() -> None:
    # 3 nodes of 8 GPU slots: a field whose first axis has 3 entries is per node
    inv = inventory(node("a", "t4", 2), node("b", "t4", 2), node("c", "l4", 1))
    snap = inv.snapshot()
    assert (snap.n_nodes, snap.n_gpus) == (3, 8)
    per_node = {f.name for f in dataclasses.fields(ClusterSnapshot)
                if isinstance(getattr(snap, f.name), np.ndarray)
                and getattr(snap, f.name).shape[:1] == (3,)}
    # node_version is bookkeeping, not content; node_dra is added where the snapshot has it
    assert per_node - {"node_version", "node_dra"} == set(ROW_ARRAYS)


def test_equal_nodes_have_equal_contents_whatever_their_names() -> None:
    inv = inventory(node("a", "t4", 2), node("b", "t4", 2), node("c", "t4", 2, cpu=8_000),
                    node("d", "l4", 2))
    snap = inv.snapshot()
    a, b, c, d = snap.row_contents(rows(0, 1, 2, 3))
    assert a == b
    assert len({a, c, d}) == 3  # another CPU, another GPU type
    inv.assume(PodKey("ns", "p", "p"), whole("b", 1))
    a, b = inv.snapshot().row_contents(rows(0, 1))
    assert a != b  # a GPU taken on b
    inv.assume(PodKey("ns", "q", "q"), whole("a", 1))
    a, b = inv.snapshot().row_contents(rows(0, 1))
    assert a == b  # the same GPU taken on a: the same state again


def test_a_changed_row_whose_content_was_computed_before_is_looked_up() -> None:
    inv = inventory(*(node(name, "t4", 2) for name in "abcd"))
    compute = Counting()
    everything = rows(0, 1, 2, 3)
    snap = inv.snapshot()
    snap.cache.derive("free", snap, compute, everything, by_content=True)
    assert compute.calls == [[0, 1, 2, 3]]  # cold: every row, computed together
    inv.assume(PodKey("ns", "p", "p"), whole("a", 0))
    snap = inv.snapshot()
    got = snap.cache.derive("free", snap, compute, everything,
                            by_content=True)
    assert compute.calls[-1] == [0]  # a state not seen before: computed
    inv.assume(PodKey("ns", "q", "q"), whole("c", 0))
    snap = inv.snapshot()
    hits = snap.cache.content_hits
    got = snap.cache.derive("free", snap, compute, everything,
                            by_content=True)
    assert len(compute.calls) == 2  # c is now what a was: looked up
    assert snap.cache.content_hits == hits + 1
    assert got[0].tolist() == [16384, 32768, 16384, 32768]
    assert got[1][:, :2].tolist() == [[0, 16384], [16384, 16384], [0, 16384], [16384, 16384]]
    # the slot matters, not only the count: GPU 1 of d taken is another content
    inv.assume(PodKey("ns", "r", "r"), whole("d", 1))
    snap = inv.snapshot()
    got = snap.cache.derive("free", snap, compute, everything,
                            by_content=True)
    assert compute.calls[-1] == [3]
    assert got[1][3, :2].tolist() == [16384, 0]


def test_hits_and_misses_together_come_back_in_row_order() -> None:
    inv = inventory(*(node(f"n{i}", "t4", 2) for i in range(6)))
    compute = Counting()
    everything = np.arange(6, dtype=np.int64)
    snap = inv.snapshot()
    snap.cache.derive("free", snap, compute, everything, by_content=True)
    inv.assume(PodKey("ns", "p", "p"), whole("n0", 0))
    snap = inv.snapshot()
    snap.cache.derive("free", snap, compute, everything, by_content=True)
    # n2 reaches n0's state (a hit), n4 a new one (a miss), n5 n0's again (a hit)
    inv.assume(PodKey("ns", "q", "q"), whole("n2", 0))
    inv.assume(PodKey("ns", "r", "r"), whole("n4", 1))
    inv.assume(PodKey("ns", "s", "s"), whole("n5", 0))
    snap = inv.snapshot()
    hits = snap.cache.content_hits
    got = snap.cache.derive("free", snap, compute, everything,
                            by_content=True)
    assert compute.calls[-1] == [4]
    assert snap.cache.content_hits == hits + 2
    assert got[0].tolist() == [16384, 32768, 16384, 32768, 16384, 16384]
    assert got[1][:, :2].tolist() == [[0, 16384], [16384, 16384], [0, 16384],
                                      [16384, 16384], [16384, 0], [0, 16384]]


def test_many_changed_rows_are_computed_together() -> None:
    n = CONTENT_ROWS + 4
    inv = inventory(*(node(f"n{i}", "t4", 2) for i in range(n)))
    compute = Counting()
    everything = np.arange(n, dtype=np.int64)
    snap = inv.snapshot()
    snap.cache.derive("free", snap, compute, everything, by_content=True)
    for i in range(n):  # every row changes, into one state: a relist's worth of rows
        inv.assume(PodKey("ns", f"p{i}", f"p{i}"), whole(f"n{i}", 0))
    snap = inv.snapshot()
    snap.cache.derive("free", snap, compute, everything, by_content=True)
    assert compute.calls[-1] == list(range(n))
    assert snap.cache.content_hits == 0


def test_wider_nodes_start_a_new_entry_and_contents_are_not_mixed() -> None:
    inv = inventory(node("a", "t4", 1), node("b", "t4", 1))
    compute = Counting()
    snap = inv.snapshot()
    snap.cache.derive("free", snap, compute, rows(0, 1), by_content=True)
    inv.upsert_node(node("wide", gpus=[gpu("t4", i) for i in range(12)]))
    inv.assume(PodKey("ns", "p", "p"), whole("a", 0))
    snap = inv.snapshot()
    got = snap.cache.derive("free", snap, compute, rows(0, 1, 2),
                            by_content=True)
    assert compute.calls[-1] == [0, 1, 2]  # the arrays widened: everything again
    assert got[0].tolist() == [0, 16384, 12 * 16384]
