"""``benchmarks/paced_pods.py``: every pod created once, in its slot's order, a failing create
kept apart, a stop ending the schedule; the quantiles by nearest rank."""

from __future__ import annotations

import threading

import pytest

from benchmarks.paced_pods import PacedCreator, latency_ms, nearest_rank


def test_every_name_is_created_once_and_stamped() -> None:
    sent: list[str] = []
    lock = threading.Lock()

    def create(name: str) -> None:
        with lock:
            sent.append(name)

    names = [f"pod-{i}" for i in range(30)]
    creator = PacedCreator(create, names, pace=2000.0)
    creator.join(10)
    creator.stop()
    assert sorted(sent) == sorted(names)
    assert set(creator.created) == set(names)
    assert not creator.failed
    # the slots are in order: a later name is never sent before an earlier one's slot
    assert creator.created["pod-29"] >= creator.started + 29 / 2000.0
    # the last create answers no sooner than its slot, 29 intervals of 0.5 ms after the first
    assert 0 < creator.created_pace() <= 2000.0


def test_a_failing_create_is_reported_not_stamped() -> None:
    def create(name: str) -> None:
        if name == "bad":
            raise RuntimeError("409 AlreadyExists")

    creator = PacedCreator(create, ["good", "bad"], pace=1000.0)
    creator.join(10)
    creator.stop()
    assert set(creator.created) == {"good"}
    assert creator.failed == {"bad": "RuntimeError('409 AlreadyExists')"}


def test_stop_ends_the_schedule() -> None:
    sent: list[str] = []
    # one pod per 10 s: the second slot is far away, so stop must cut the wait short
    creator = PacedCreator(sent.append, ["first", "second"], pace=0.1)
    creator.stop()  # returns without waiting out the second slot
    assert sent in ([], ["first"])
    assert "second" not in creator.created


def test_steady_leaves_out_the_first_slots() -> None:
    names = [f"pod-{i}" for i in range(20)]
    creator = PacedCreator(lambda name: None, names, pace=2000.0)
    creator.join(10)
    creator.stop()
    assert list(creator.steady(0.05)) == names[1:]   # ceil(0.05 x 20) = 1 left out
    assert list(creator.steady(0.5)) == names[10:]
    assert list(creator.steady(0.0)) == names
    with pytest.raises(ValueError, match="warmup_share"):
        creator.steady(1.0)


@pytest.mark.parametrize("pace", [0.0, -1.0, float("inf"), float("nan")])
def test_a_pace_that_is_not_a_positive_number_is_refused(pace: float) -> None:
    with pytest.raises(ValueError, match="pace"):
        PacedCreator(lambda name: None, ["a"], pace=pace)


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([5.0], 0.5, 5.0),
    ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),   # ceil(0.5 x 4) = rank 2
    ([1.0, 2.0, 3.0, 4.0, 5.0], 0.5, 3.0),   # ceil(2.5) = rank 3
    ([4.0, 1.0, 3.0, 2.0], 0.9, 4.0),   # unsorted in; ceil(3.6) = rank 4
    (list(map(float, range(1, 101))), 0.99, 99.0),   # rank 99 of 100
    ([1.0, 2.0], 1.0, 2.0),
])
def test_nearest_rank(values: list[float], q: float, expected: float) -> None:
    assert nearest_rank(values, q) == expected


@pytest.mark.parametrize("q", [0.0, 1.5])
def test_nearest_rank_refuses_q_outside_0_1(q: float) -> None:
    with pytest.raises(ValueError, match="q"):
        nearest_rank([1.0], q)


def test_latency_counts_the_pods_with_both_stamps() -> None:
    created = {"a": 1.000, "b": 2.000, "c": 3.000, "never-bound": 4.0}
    bound = {"a": 1.010, "b": 2.030, "c": 2.999, "not-ours": 9.0}
    # spans: a 10 ms, b 30 ms, c seen bound before its create answered: 0 ms
    assert latency_ms(created, bound) == pytest.approx({"p50": 10.0, "p90": 30.0, "p99": 30.0})
    assert latency_ms({}, bound) == {}
