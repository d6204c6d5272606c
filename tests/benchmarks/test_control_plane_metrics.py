"""The histogram reader of ``benchmarks/control_plane_metrics.py``: buckets by ``le`` only
(kube-scheduler's series also carry ``profile="..."``, whose name ends in ``le``), summed over
the label sets that match, p50 interpolated in its bucket."""

from __future__ import annotations

from benchmarks.control_plane_metrics import parse

_SERIES = "scheduler_scheduling_attempt_duration_seconds"
_OK = 'profile="gpu-scheduler",result="scheduled"'
_ERROR = 'profile="gpu-scheduler",result="error"'
SCHEDULER = "\n".join([
    "# a comment",
    f'{_SERIES}_bucket{{{_OK},le="0.002"}} 2',
    f'{_SERIES}_bucket{{{_OK},le="0.004"}} 6',
    f'{_SERIES}_bucket{{{_OK},le="+Inf"}} 8',
    f"{_SERIES}_sum{{{_OK}}} 0.03",
    f"{_SERIES}_count{{{_OK}}} 8",
    f'{_SERIES}_bucket{{{_ERROR},le="0.002"}} 5',
    f'{_SERIES}_bucket{{{_ERROR},le="+Inf"}} 5',
    f"{_SERIES}_count{{{_ERROR}}} 5",
])


def test_buckets_are_read_by_le_and_the_p50_interpolated() -> None:
    histogram = parse(SCHEDULER, _SERIES, ('result="scheduled"',))
    assert histogram.buckets == ((0.002, 2.0), (0.004, 6.0), (float("inf"), 8.0))
    assert histogram.count == 8
    # rank 4 of 8 lies in (2 ms, 4 ms], two of its four: 2 + 2 x 2/4 = 3 ms
    assert histogram.quantile_ms(0.5) == 3.0
    assert histogram.mean_ms() == 3.75  # 30 ms / 8
