"""MIG slot arithmetic as lookup tables (so the fit kernel is a gather, not a loop).

A partitioned GPU has up to 8 memory slots; ``used`` is a uint8 bitmask of occupied slots. GPUs
with fewer slots (the A30 has 4) start with the missing high slots marked used, so one table
serves every type.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.units import MAX_MIG_SLOTS

MAX_SLOTS = MAX_MIG_SLOTS


def _free_starts_table() -> npt.NDArray[np.uint8]:
    """``FREE_STARTS[slices, used]``: bit ``s`` set iff slots ``s .. s+slices-1`` are free.

    Shape ``(MAX_SLOTS + 1, 256)``; row 0 is all zeros (a zero-slice profile fits nowhere).
    """
    table = np.zeros((MAX_SLOTS + 1, 256), dtype=np.uint8)
    for slices in range(1, MAX_SLOTS + 1):
        span = (1 << slices) - 1
        for used in range(256):
            mask = 0
            for start in range(MAX_SLOTS - slices + 1):
                if not used & (span << start):
                    mask |= 1 << start
            table[slices, used] = mask
    return table


FREE_STARTS: npt.NDArray[np.uint8] = _free_starts_table()
POPCOUNT: npt.NDArray[np.int8] = np.array([bin(i).count("1") for i in range(256)], dtype=np.int8)


def phantom_slots(slots: int) -> int:
    """The used-mask a fresh GPU with ``slots`` real slots starts with (A30: 0xF0)."""
    return (0xFF << slots) & 0xFF


def span_mask(start: int, slices: int) -> int:
    """The slots ``start .. start+slices-1`` as a mask; both are clamped to the 8 slots first,
    so a hostile ``slices`` never builds a huge integer."""
    start = min(max(start, 0), MAX_SLOTS)
    slices = min(max(slices, 0), MAX_SLOTS)
    return (((1 << slices) - 1) << start) & 0xFF
