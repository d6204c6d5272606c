"""Names -> rows once per node list: prioritize gets filter's answer, the next pod's filter
the same list; a node that comes or goes makes a new node-name tuple, and the mapping anew."""

from __future__ import annotations

from extender.inventory.store import Inventory
from extender.platform import Platform
from extender.scheduling.evaluate import RowsMemo
from extender.sync.apply import InventoryApplier
from tests.sync.clusters import l4_node


def _cluster(platform: Platform, *names: str, gpus: int) -> tuple[Inventory, InventoryApplier]:
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    for name in names:
        applier.node_event("ADDED", l4_node(name, gpus=gpus))
    return inventory, applier


def test_equal_names_on_the_same_node_set_are_mapped_once(platform: Platform) -> None:
    inventory, applier = _cluster(platform, "n1", "n2", "n3", gpus=2)
    memo = RowsMemo()
    snapshot = inventory.snapshot()
    first = memo.rows(snapshot, ["n3", "n1", "gone"])
    assert first.tolist() == [2, 0, -1]  # rows in insertion order; -1: not in the inventory
    # new list objects, equal names (as each request decodes them afresh): the same rows
    assert memo.rows(inventory.snapshot(), ["n3", "n1", "gone"]) is first
    assert memo.rows(snapshot, ["n1", "n2"]).tolist() == [0, 1]  # a second list: kept too
    assert memo.rows(snapshot, ["n3", "n1", "gone"]) is first
    assert memo.hits == 2
    names = ["n1", "n2"]
    memo.rows(snapshot, names)
    names.append("n3")  # the caller's list changes: the memo kept its own copy
    assert memo.rows(snapshot, names).tolist() == [0, 1, 2]
    # a node goes: a new node-name tuple, mapped again (n2's row is free now)
    applier.node_event("DELETED", l4_node("n2", gpus=2))
    after = inventory.snapshot()
    assert after.node_names is not snapshot.node_names
    assert memo.rows(after, ["n1", "n2"]).tolist() == [0, -1]


def test_every_length_of_list_maps_as_the_index_says(platform: Platform) -> None:
    # itemgetter answers a bare value for one name and needs at least one: both lengths,
    # and a list with an unknown name, take the other path; the rows are the same
    inventory, _ = _cluster(platform, "n1", "n2", gpus=2)
    snapshot = inventory.snapshot()
    for names, rows in (([], []), (["n2"], [1]), (["gone"], [-1]), (["n2", "n1"], [1, 0]),
                        (["n2", "gone", "n1"], [1, -1, 0])):
        assert RowsMemo().rows(snapshot, names).tolist() == rows, names


def test_a_node_that_changes_keeps_the_mapping(platform: Platform) -> None:
    # A node's update (here it loses two GPUs) keeps every node's row, so the snapshot keeps
    # its node-name tuple and the memo answers the next filter's equal list without mapping
    # it again: during a burst the watch applies node updates between filters.
    inventory, applier = _cluster(platform, "n1", "n2", "n3", gpus=4)
    memo = RowsMemo()
    before = inventory.snapshot()
    first = memo.rows(before, ["n3", "n1"])
    applier.node_event("MODIFIED", l4_node("n1", gpus=2))
    after = inventory.snapshot()
    assert after.generation > before.generation
    assert int((after.gpu_type[0] >= 0).sum()) == 2  # the change is there
    assert after.node_names is before.node_names
    assert memo.rows(after, ["n3", "n1"]) is first and memo.hits == 1
    # a node comes: rows may move, so a new tuple and a new mapping
    applier.node_event("ADDED", l4_node("n4"))
    grown = inventory.snapshot()
    assert grown.node_names is not before.node_names
    assert memo.rows(grown, ["n4", "n1"]).tolist() == [3, 0] and memo.hits == 1

