"""``inventory.grants`` on its own: one row of arrays, no store, no lock.

- applying a holding and removing it again leaves the row exactly as it was (every kind);
- ``strict`` raises ``CapacityError`` and leaves the arrays untouched (``check_holding`` works
  on a probe copy); lenient records the same message and applies anyway;
- ``check_holding`` releases the pod's old holding first when it is on the same node;
- ``within_bounds`` drops an assignment no GPU can have, before anything is applied.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from extender.errors import CapacityError
from extender.inventory.arrays import NOT_MIG, Arrays, Columns, MigLayouts, write_gpu
from extender.inventory.grants import apply_holding, check_holding, within_bounds
from extender.inventory.holding import ApplyReport, Holding
from extender.model import Assignment, GpuDevice, GpuGrant, PodKey, RequestKind
from tests.core.helpers import catalog, gpu

KEY = PodKey("ns", "p", "uid-p")


def row_of(*gpus: GpuDevice) -> tuple[Arrays, dict[int, int], MigLayouts]:
    """One node row: the GPUs in slots 0.., 64 cores and 256 GiB free."""
    columns = Columns(1, len(gpus))
    layouts = MigLayouts(catalog())
    arrays = columns.arrays
    arrays["node_valid"][0] = True
    arrays["cpu_free"][0] = 64_000
    arrays["memory_free"][0] = 256_000
    for slot, device in enumerate(gpus):
        layout = NOT_MIG if device.mig is None else layouts.row_of(device)
        write_gpu(arrays, 0, slot, device, layout=layout,
                  mig_slots=int(catalog().mig_slots[device.type_index]))
    return arrays, {device.index: slot for slot, device in enumerate(gpus)}, layouts


def holding(kind: RequestKind, *grants: GpuGrant, cpu: int = 0) -> Holding:
    return Holding(KEY, "n", Assignment("n", kind, grants), cpu_milli=cpu, memory_mib=cpu)


def copy(arrays: Arrays) -> dict[str, np.ndarray[Any, Any]]:
    return {name: array.copy() for name, array in arrays.items()}


ROUND_TRIPS = [
    pytest.param((gpu("t4", 0),), holding(RequestKind.VRAM, GpuGrant(0, 4096), cpu=1000),
                 {"free_mib": 16384 - 4096, "pods": 1, "cpu_free": 64_000 - 1000},
                 id="a 4096 MiB share of a T4: 16384 - 4096 = 12288 MiB free, 1 pod"),
    pytest.param((gpu("t4", 0), gpu("t4", 1)),
                 holding(RequestKind.WHOLE, GpuGrant(1, 16384, whole=True)),
                 {"free_mib": 0, "pods": 1}, id="GPU 1 whole: all of its 16384 MiB"),
    pytest.param((gpu("l4", 0, replicas=4),),
                 holding(RequestKind.WHOLE, GpuGrant(0, 6144, replica=True)),
                 {"replicas_free": 4 - 1, "pods": 1}, id="one of 4 time-slice replicas"),
    pytest.param((gpu("a100-80gb", 0, mig="dynamic"),),
                 holding(RequestKind.MIG, GpuGrant(0, 40192, mig_profile="3g.40gb",
                                                   mig_start=4, mig_slices=4)),
                 {"pods": 1}, id="a 3g.40gb at slot 4: slots 4..7 marked used"),
]


@pytest.mark.parametrize(("gpus", "held", "after"), ROUND_TRIPS)
def test_apply_then_remove_restores_the_row(gpus: tuple[GpuDevice, ...], held: Holding,
                                            after: dict[str, int]) -> None:
    arrays, slots, layouts = row_of(*gpus)
    before = copy(arrays)
    report = ApplyReport()
    apply_holding(arrays, 0, held, +1, slots=slots, catalog=catalog(), layouts=layouts.table,
                  strict=True, report=report)
    assert report.conflicts == []
    assert held.assignment is not None
    slot = slots[held.assignment.grants[0].index]
    for name, value in after.items():
        got = arrays[name][0] if arrays[name].ndim == 1 else arrays[name][0, slot]
        assert int(got) == value, name
    if held.assignment.grants[0].mig_profile is not None:
        # slots 4..7 -> bits 0b1111_0000 set on top of what was used before
        assert int(arrays["mig_used"][0, slot]) & 0b1111_0000 == 0b1111_0000
    apply_holding(arrays, 0, held, -1, slots=slots, catalog=catalog(), layouts=layouts.table,
                  strict=False, report=report)
    assert report.conflicts == []
    for name, array in before.items():
        np.testing.assert_array_equal(arrays[name], array, err_msg=name)


REFUSALS = [
    pytest.param((gpu("t4", 0),), holding(RequestKind.VRAM, GpuGrant(0, 16385)),
                 "needs 16385 MiB VRAM, 16384 free", id="16385 > 16384 MiB"),
    pytest.param((gpu("t4", 0),), holding(RequestKind.WHOLE, GpuGrant(2, 16384, whole=True)),
                 "GPU 2 is not on node n", id="an index the row does not have"),
    pytest.param((gpu("t4", 0),), holding(RequestKind.SHARED, GpuGrant(0, 8192, replica=True)),
                 "not time-sliced", id="a replica of a GPU without replicas"),
    pytest.param((gpu("l4", 0, replicas=2, shared=True),),
                 holding(RequestKind.WHOLE, GpuGrant(0, 8192, replica=True)),
                 "nvidia.com/gpu.shared units, not nvidia.com/gpu",
                 id="a nvidia.com/gpu replica of a renamed (gpu.shared) GPU"),
    pytest.param((gpu("a100-80gb", 0, mig=(("3g.40gb", 0),)),),
                 holding(RequestKind.MIG, GpuGrant(0, 40192, mig_profile="3g.40gb",
                                                   mig_start=4, mig_slices=4)),
                 "may not start at slot 4", id="a static layout with 3g.40gb at 0 only"),
    pytest.param((gpu("t4", 0),), holding(RequestKind.MIG, GpuGrant(
        0, 9856, mig_profile="1g.10gb", mig_start=0, mig_slices=1)),
                 "is not possible on this GPU", id="MIG on a T4"),
]


@pytest.mark.parametrize(("gpus", "held", "message"), REFUSALS)
def test_strict_raises_and_writes_nothing_lenient_records(
        gpus: tuple[GpuDevice, ...], held: Holding, message: str) -> None:
    arrays, slots, layouts = row_of(*gpus)
    before = copy(arrays)
    with pytest.raises(CapacityError, match=message):
        check_holding(arrays, 0, held, None, slots=slots, catalog=catalog(),
                      layouts=layouts.table)
    for name, array in before.items():
        np.testing.assert_array_equal(arrays[name], array, err_msg=name)
    report = ApplyReport()
    apply_holding(arrays, 0, held, +1, slots=slots, catalog=catalog(), layouts=layouts.table,
                  strict=False, report=report)
    # the first conflict is the one strict raised on (lenient goes on and may find more)
    assert message in report.conflicts[0] and str(KEY) in report.conflicts[0]


def test_check_holding_releases_the_old_holding_on_the_same_node_first() -> None:
    # 12288 MiB held of 16384: a new 12288 share fits only once the old one is released
    # (16384 - 12288 = 4096 < 12288; 16384 >= 12288)
    arrays, slots, layouts = row_of(gpu("t4", 0))
    old = holding(RequestKind.VRAM, GpuGrant(0, 12288))
    apply_holding(arrays, 0, old, +1, slots=slots, catalog=catalog(), layouts=layouts.table,
                  strict=True, report=ApplyReport())
    new = holding(RequestKind.VRAM, GpuGrant(0, 12288))
    check_holding(arrays, 0, new, old, slots=slots, catalog=catalog(), layouts=layouts.table)
    with pytest.raises(CapacityError, match="needs 12288 MiB VRAM, 4096 free"):
        check_holding(arrays, 0, new, None, slots=slots, catalog=catalog(),
                      layouts=layouts.table)
    assert int(arrays["free_mib"][0, 0]) == 4096  # probes only


def test_within_bounds_drops_an_impossible_assignment() -> None:
    report = ApplyReport()
    fine = holding(RequestKind.VRAM, GpuGrant(0, 4096))
    assert within_bounds(fine, report) is fine and report.conflicts == []
    wild = holding(RequestKind.VRAM, GpuGrant(0, 4096), GpuGrant(1 << 20, 4096))
    kept = within_bounds(wild, report)
    assert kept.assignment is None and kept.key == KEY
    assert len(report.conflicts) == 1 and "out of range" in report.conflicts[0]


def test_mig_layouts_intern_once_per_type_and_instances() -> None:
    layouts = MigLayouts(catalog())
    a100 = catalog().index_of("a100-80gb")
    first = layouts.intern(a100, (("3g.40gb", 4), ("3g.40gb", 0)))
    assert layouts.intern(a100, (("3g.40gb", 0), ("3g.40gb", 4))) == first  # order-free
    assert first == 1 and layouts.table.shape[0] == 2  # row 0 is dynamic MIG
    p = catalog().mig.index["3g.40gb"]
    assert int(layouts.table[first, p]) == 0b0001_0001  # starts 0 and 4
