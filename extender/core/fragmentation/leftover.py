"""What a share leaves on its GPU that no later share can fill: the default's dW (issue 27).

FGD's dF asks whether the *next* typical pod fits the space a placement leaves. At 100 %
arrived on openb almost every GPU holds a share, and what is left free is the slices between
them: 0.47 + 0.47 leaves 0.06, which nothing fills, while 0.46 + 0.32 + 0.22 leaves none. dF
cannot tell the two apart when the 0.53 left after the first 0.47 is equally usable for the
next pod either way. The leftover table looks further: the least a slice of ``g`` thousandths
can be left with once shares of the typical sizes fill it as well as they can::

    reach(v) = v == 0  or  any(reach(v - s) for s in sizes if s <= v)
    W(g)     = (g - max{v <= g : reach(v)}) / 1000        GPUs

with ``sizes`` the thousandths of the mix's one-GPU shares (the caller's choice: the default
strategy passes those that at least ``gapFillers`` of the share pods ask, as the supply of
every size is taken to be unbounded). E.g. sizes {470, 320, 220}: a
slice of 540 is filled exactly (320 + 220): ``W(540) = 0``; of 530, best by one 470 (320 + 220
is too much, 220 + 220 = 440 leaves more): ``W(530) = 0.06``; of 200, by nothing:
``W(200) = 0.2``. So a 470 placed on a GPU with 1000 free leaves ``W(530) = 0.06`` for
good, and placed where 540 are free ``W(70) = 0.07`` instead of the ``W(540) = 0`` there was.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from extender.units import MILLI


def leftover_table(sizes: Iterable[int], capacity: int = MILLI) -> npt.NDArray[np.float64]:
    """(capacity + 1,) ``W(g)`` in GPUs for ``g`` = 0..capacity thousandths free (module
    docstring); a size outside 1..capacity is left out (it fills nothing)."""
    usable = sorted({int(s) for s in sizes if 0 < int(s) <= capacity})
    reach = np.zeros(capacity + 1, dtype=bool)
    reach[0] = True
    for v in range(1, capacity + 1):
        reach[v] = any(reach[v - s] for s in usable if s <= v)
    fullest = np.maximum.accumulate(np.where(reach, np.arange(capacity + 1), 0))
    out: npt.NDArray[np.float64] = (np.arange(capacity + 1) - fullest) / MILLI
    out.flags.writeable = False
    return out
