"""The budget of unpinned holds (``scheduling/holds.py`` ``within_budget``): per node
(``MAX_TENTATIVE_PER_NODE`` = 2) and per namespace (``MAX_TENTATIVE_PER_NAMESPACE`` = 8), not
counting the pod's own earlier hold, nor holds whose bind is in flight (pinned)."""

from __future__ import annotations

import pytest

from extender.core.assign import assign
from extender.inventory import Inventory
from extender.model import PodKey
from extender.scheduling.holds import (
    MAX_TENTATIVE_PER_NAMESPACE,
    MAX_TENTATIVE_PER_NODE,
    within_budget,
)
from tests.core.helpers import inventory, node, placement, request


def _books(holds: list[tuple[str, str, str]], *, pinned: str = "") -> Inventory:
    """Ten 8-T4 nodes, and one 1-GPU hold with a TTL per (uid, namespace, node);
    ``pinned``: that uid's hold has its bind in flight."""
    inv = inventory(*(node(f"n{i}", "t4", 8) for i in range(10)))
    for uid, namespace, node_name in holds:
        snap = inv.snapshot()
        assignment = assign(snap, placement(request("whole", 1)), snap.node_index[node_name])
        inv.assume(PodKey(namespace, uid, uid), assignment, ttl=30.0)
        if uid == pinned:
            inv.pin(uid, assignment)
    return inv


def _spread(n: int, namespace: str) -> list[tuple[str, str, str]]:
    """``n`` holds of ``namespace`` on nodes n2, n3, ... (one each)."""
    return [(f"{namespace}-{i}", namespace, f"n{i + 2}") for i in range(n)]


@pytest.mark.parametrize(("holds", "pinned", "uid", "expected"), [
    # nothing held: within
    ([], "", "new", True),
    # one on n0: 1 < 2, within
    ([("a", "ml", "n0")], "", "new", True),
    # two on n0 (another namespace each): 2 = MAX_TENTATIVE_PER_NODE, over
    ([("a", "x", "n0"), ("b", "y", "n0")], "", "new", False),
    # the pod's own earlier hold on n0 does not count: 1 < 2
    ([("a", "x", "n0"), ("new", "ml", "n0")], "", "new", True),
    # a pinned hold (bind in flight) does not count: 1 < 2
    ([("a", "x", "n0"), ("b", "y", "n0")], "b", "new", True),
    # seven of ml's on other nodes: 7 < 8, within
    (_spread(7, "ml"), "", "new", True),
    # eight of ml's: 8 = MAX_TENTATIVE_PER_NAMESPACE, over, though n0 holds none
    (_spread(8, "ml"), "", "new", False),
    # eight of another namespace's: ml's budget is its own
    (_spread(8, "other"), "", "new", True),
])
def test_unpinned_holds_are_counted_per_node_and_per_namespace(
        holds: list[tuple[str, str, str]], pinned: str, uid: str, expected: bool) -> None:
    assert (MAX_TENTATIVE_PER_NODE, MAX_TENTATIVE_PER_NAMESPACE) == (2, 8)  # the table's
    assert within_budget(_books(holds, pinned=pinned), uid, "n0", "ml") is expected
