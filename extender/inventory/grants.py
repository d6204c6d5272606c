"""Checking and applying a pod's GPU grants on one row of the inventory's arrays.

Pure functions over ``Arrays`` (``extender.inventory.arrays``) and a row: no lock, no holding
bookkeeping (that is the store's). ``apply_holding`` adds (``sign=+1``) or removes (``-1``) a
holding; when adding it checks every per-GPU invariant with ``check_grant``. ``strict`` turns a
violated invariant into ``CapacityError`` (used on a probe copy by ``check_holding``, so a strict
failure changes nothing); otherwise the problem is appended to the report and the holding is
applied anyway: observed state is the truth even when it is wrong, and hiding it would
over-commit further.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from extender.catalog import Catalog
from extender.errors import CapacityError
from extender.inventory.arrays import GPU_ARRAYS, Arrays
from extender.inventory.holding import ApplyReport, Holding
from extender.inventory.layout import MAX_SLOTS, span_mask
from extender.inventory.snapshot import DYNAMIC_MIG, NOT_MIG
from extender.model import GpuGrant, RequestKind
from extender.units import MAX_GPU_INDEX, MAX_GPU_MEMORY_MIB, MAX_GPUS_PER_POD


def check_holding(arrays: Arrays, row: int, new: Holding, old: Holding | None, *,
                  slots: dict[int, int], catalog: Catalog,
                  layouts: np.ndarray[Any, Any]) -> None:
    """Raise ``CapacityError`` if ``new`` does not fit on ``row`` (``old`` released first, if
    it is on the same node). Works on a copy of the row: ``arrays`` are not written.
    ``slots``: ``new.node``'s physical GPU index -> slot."""
    probe = {name: arrays[name][row].copy()[None, :] for name in GPU_ARRAYS}
    if old is not None and old.node == new.node:
        apply_holding(probe, 0, old, -1, slots=slots, catalog=catalog, layouts=layouts,
                      strict=False, report=ApplyReport())
    apply_holding(probe, 0, new, +1, slots=slots, catalog=catalog, layouts=layouts,
                  strict=True, report=ApplyReport(), node=new.node)


def apply_holding(arrays: Arrays, row: int, holding: Holding, sign: int, *,
                  slots: dict[int, int], catalog: Catalog, layouts: np.ndarray[Any, Any],
                  strict: bool, report: ApplyReport, node: str | None = None) -> None:
    """Add (sign=+1) or remove (-1) a holding's grants on ``row``; its CPU and memory too when
    ``arrays`` has the node arrays. ``slots``: the node's physical GPU index -> slot;
    ``layouts``: the MIG layout table.

    ``strict``: raise ``CapacityError`` on any invariant violation (used on a probe copy).
    Otherwise apply anyway and record the conflict.
    """
    node = node or holding.node
    if "cpu_free" in arrays:
        arrays["cpu_free"][row] -= sign * holding.cpu_milli
        arrays["memory_free"][row] -= sign * holding.memory_mib
    assignment = holding.assignment
    if assignment is None:
        return
    kind = assignment.kind
    seen: set[int] = set()
    for grant in assignment.grants:
        slot = slots.get(grant.index)
        if slot is None:
            problem(strict, report, f"{holding.key}: GPU {grant.index} is not on node {node}")
            continue
        if kind in (RequestKind.WHOLE, RequestKind.SHARED) and grant.index in seen:
            problem(strict, report, f"{holding.key}: GPU {grant.index} granted twice")
        seen.add(grant.index)
        if sign > 0:
            check_grant(arrays, row, slot, holding=holding, grant=grant, catalog=catalog,
                        layouts=layouts, strict=strict, report=report)
        arrays["free_mib"][row, slot] -= sign * grant.vram_mib
        arrays["pods"][row, slot] += sign
        if grant.replica:
            arrays["replicas_free"][row, slot] -= sign
        if grant.mig_profile is not None and grant.mig_start >= 0:
            span = span_mask(grant.mig_start, grant.mig_slices)
            if sign > 0:
                arrays["mig_used"][row, slot] |= span
            else:
                arrays["mig_used"][row, slot] &= ~np.uint8(span)


def check_grant(arrays: Arrays, row: int, slot: int, *, holding: Holding, grant: GpuGrant,
                catalog: Catalog, layouts: np.ndarray[Any, Any], strict: bool,
                report: ApplyReport) -> None:
    """The per-GPU invariants of one grant before it is added to ``(row, slot)``."""
    where = f"{holding.key} on {holding.node} GPU {grant.index}"
    if not arrays["healthy"][row, slot] and strict:
        problem(strict, report, f"{where}: GPU is unhealthy")
    layout = int(arrays["mig_layout"][row, slot])
    if grant.mig_profile is not None:
        check_mig(arrays, row, slot, grant=grant, where=where, catalog=catalog,
                  layouts=layouts, strict=strict, report=report)
        return
    if layout != NOT_MIG:
        problem(strict, report, f"{where}: GPU is MIG-partitioned; only MIG instances may "
                                "use it")
    free = int(arrays["free_mib"][row, slot])
    total = int(arrays["total_mib"][row, slot])
    if grant.vram_mib < 1:
        # a share of 0 MiB would fit even on a GPU held whole
        problem(strict, report, f"{where}: a GPU grant must hold at least 1 MiB VRAM, not "
                                f"{grant.vram_mib}")
    if grant.whole and grant.vram_mib != total:
        # a whole GPU holds all its VRAM, so no share can join it later
        problem(strict, report, f"{where}: a whole GPU grant must hold all {total} MiB, not "
                                f"{grant.vram_mib}")
    if grant.whole:
        if int(arrays["replicas"][row, slot]) > 0:
            problem(strict, report, f"{where}: GPU is time-sliced; it gives replicas, not "
                                    "whole GPUs")
        if int(arrays["pods"][row, slot]) > 0 or free != total:
            problem(strict, report, f"{where}: whole GPU is already in use")
    elif grant.replica:
        if int(arrays["replicas"][row, slot]) <= 1:
            problem(strict, report, f"{where}: GPU is not time-sliced")
        elif int(arrays["replicas_free"][row, slot]) < 1:
            problem(strict, report, f"{where}: no time-slice replica left")
        kind = holding.assignment.kind if holding.assignment else None
        shared = bool(arrays["replicas_shared"][row, slot])
        if kind is RequestKind.WHOLE and shared:
            problem(strict, report, f"{where}: its replicas are nvidia.com/gpu.shared units, "
                                    "not nvidia.com/gpu")
        if kind is RequestKind.SHARED and not shared:
            problem(strict, report, f"{where}: its replicas are nvidia.com/gpu units, not "
                                    "nvidia.com/gpu.shared")
    if grant.vram_mib > free:
        problem(strict, report, f"{where}: needs {grant.vram_mib} MiB VRAM, {free} free")


def check_mig(arrays: Arrays, row: int, slot: int, *, grant: GpuGrant, where: str,
              catalog: Catalog, layouts: np.ndarray[Any, Any], strict: bool,
              report: ApplyReport) -> None:
    """A MIG grant's invariants: the profile exists on the GPU's type, its span, a legal start
    in the GPU's layout (``layouts`` row; any legal start when dynamic), no overlap."""
    layout = int(arrays["mig_layout"][row, slot])
    type_index = int(arrays["gpu_type"][row, slot])
    assert grant.mig_profile is not None
    profile = catalog.mig_profile(type_index, grant.mig_profile)
    if layout == NOT_MIG or profile is None:
        problem(strict, report, f"{where}: MIG {grant.mig_profile} is not possible on this GPU")
        return
    if grant.mig_slices != profile.slices:
        problem(strict, report, f"{where}: MIG {grant.mig_profile} spans {profile.slices} "
                                f"slots, not {grant.mig_slices}")
    if not 0 <= grant.mig_start < MAX_SLOTS:
        problem(strict, report, f"{where}: MIG start slot {grant.mig_start} is out of range "
                                f"0..{MAX_SLOTS - 1}")
        return
    p = catalog.mig.index[grant.mig_profile]
    legal = profile.start_mask if layout == DYNAMIC_MIG else int(layouts[layout, p])
    if not legal >> grant.mig_start & 1:
        problem(strict, report, f"{where}: MIG {grant.mig_profile} may not start at slot "
                                f"{grant.mig_start}")
    if int(arrays["mig_used"][row, slot]) & span_mask(grant.mig_start, profile.slices):
        problem(strict, report, f"{where}: MIG slots {grant.mig_start}.."
                                f"{grant.mig_start + profile.slices - 1} overlap an instance "
                                "in use")


def problem(strict: bool, report: ApplyReport, message: str) -> None:
    """Raise ``CapacityError`` when ``strict``, else record the conflict."""
    if strict:
        raise CapacityError(message)
    report.conflicts.append(message)


def within_bounds(holding: Holding, report: ApplyReport) -> Holding:
    """Validate before applying: a grant no GPU can have (the decoders refuse those; this
    guards every other caller) would overflow the arrays half-way through an apply, so such
    an assignment is not counted at all, and reported."""
    assignment = holding.assignment
    if assignment is None:
        return holding
    for grant in assignment.grants:
        mig_ok = grant.mig_profile is None or (
            0 <= grant.mig_start < MAX_SLOTS
            and 1 <= grant.mig_slices <= MAX_SLOTS - grant.mig_start)
        if not (0 <= grant.index < MAX_GPU_INDEX and 0 <= grant.vram_mib <= MAX_GPU_MEMORY_MIB
                and mig_ok) or len(assignment.grants) > MAX_GPUS_PER_POD:
            report.conflicts.append(f"{holding.key}: GPU grant {grant} is out of range; its "
                                    "assignment is not counted")
            return replace(holding, assignment=None)
    return holding
