"""The grouped encoders produce exactly what plain ``orjson.dumps`` of dicts would."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.reasons import Reason
from extender.platform import Platform
from extender.server.answers import NodeGroup, encode_filter_names, encode_priorities, pick
from extender.server.failures import ReasonMessages, group_failures
from tests.clock import FakeClock

dns_names = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?", fullmatch=True)
any_names = st.text(min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(dns_names, any_names), min_size=0, max_size=40, unique=True),
       st.data())
def test_priorities_decode_to_the_nonzero_scores(names: list[str], data: st.DataObject) -> None:
    scores = np.array(data.draw(st.lists(st.integers(0, 10), min_size=len(names),
                                         max_size=len(names))), dtype=np.int64)
    decoded = encode_priorities(names, scores).document()
    assert {d["Host"]: d["Score"] for d in decoded} == \
        {n: int(s) for n, s in zip(names, scores, strict=True) if s}
    assert len(decoded) == int((scores > 0).sum())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(dns_names, any_names), min_size=0, max_size=40, unique=True),
       st.lists(st.text(max_size=30), min_size=1, max_size=4), st.data())
def test_filter_maps_decode_to_the_plain_maps(names: list[str], messages: list[str],
                                              data: st.DataObject) -> None:
    choice = data.draw(st.lists(st.integers(-1, 2 * len(messages) - 1), min_size=len(names),
                                max_size=len(names)))
    feasible = [n for n, c in zip(names, choice, strict=True) if c < 0]
    failed = [NodeGroup([n for n, c in zip(names, choice, strict=True) if c == i], m)
              for i, m in enumerate(messages)]
    hopeless = [NodeGroup([n for n, c in zip(names, choice, strict=True)
                           if c == i + len(messages)], m) for i, m in enumerate(messages)]
    document = encode_filter_names(feasible, failed, hopeless, "e").document()
    assert document == {
        "NodeNames": feasible,
        "FailedNodes": {n: g.value for g in failed for n in g.names},
        "FailedAndUnresolvableNodes": {n: g.value for g in hopeless for n in g.names},
        "Error": "e"}


def test_pick_handles_zero_one_and_many() -> None:
    names = ["a", "b", "c"]
    assert pick(names, np.array([], dtype=np.intp)) == []
    assert pick(names, np.array([1])) == ["b"]
    assert pick(names, np.array([2, 0])) == ["c", "a"]


def test_grouping_large_numbers_takes_the_row_path(platform: Platform) -> None:
    """Numbers too large for the packed key still group by identical message."""
    from tests.server.conftest import online_service
    from tests.sync.clusters import l4_node, vram_pod
    from tests.sync.fake_api import FakeApiServer

    service = online_service(platform, FakeApiServer([l4_node("n1")], [vram_pod("p")]),
                             clock=FakeClock())
    snapshot = service.inventory.snapshot()
    from extender.scheduling.evaluate import Evaluation

    n = 5
    code = np.array([Reason.VRAM_BUSY] * n, dtype=np.int8)
    params = np.array([[2_000_000, 3, 9_000_000]] * 3 + [[5, 3, 6144]] * 2, dtype=np.int64)
    names = [f"n{i}" for i in range(n)]
    evaluation = Evaluation(snapshot, names, code, params, fit=None,  # type: ignore[arg-type]
                            known=np.arange(n))
    feasible, failed, unresolvable = group_failures(evaluation, ReasonMessages(
        platform.catalog))
    assert feasible == [] and unresolvable == []
    # one group per distinct (best free, candidates, need): rows 0-2 and rows 3-4
    assert sorted((list(g.names), g.value) for g in failed) == [
        (["n0", "n1", "n2"],
         "node's 3/3 accepted GPUs lack free VRAM: need 9000000 MiB, best free 2000000 MiB"),
        (["n3", "n4"],
         "node's 3/3 accepted GPUs lack free VRAM: need 6144 MiB, best free 5 MiB"),
    ]
