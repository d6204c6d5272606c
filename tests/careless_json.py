"""What careless and hostile clients send, for the fuzz tests: arbitrary JSON values, and a
valid document with one part replaced (so hypothesis shrinks a failure to the part that broke
it, a readable document rather than a seed)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12)


def set_part(document: dict[str, Any], path: tuple[str | int, ...], value: object) -> None:
    """Set the part at ``path`` to ``value``, making the objects above it where they are
    missing; a path through a list index it does not have, or through a value that is not a
    container, changes nothing."""
    target: Any = document
    for step in path[:-1]:
        if isinstance(target, dict):
            target = target.setdefault(step, {}) if isinstance(step, str) else None
        elif isinstance(target, list) and isinstance(step, int) and step < len(target):
            target = target[step]
        else:
            return
        if target is None:
            return
    last = path[-1]
    settable = isinstance(target, dict) and isinstance(last, str)
    settable |= isinstance(target, list) and isinstance(last, int) and last < len(target)
    if settable:
        target[last] = value


def parts_of(document: Any, *, per_list: int = 3,
             prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The path of every part of ``document`` (the first ``per_list`` entries of each list),
    for ``set_part``."""
    if isinstance(document, dict):
        items: list[tuple[str | int, Any]] = list(document.items())
    elif isinstance(document, list):
        items = list(enumerate(document[:per_list]))
    else:
        return []
    out: list[tuple[str | int, ...]] = []
    for key, value in items:
        out.append((*prefix, key))
        out += parts_of(value, per_list=per_list, prefix=(*prefix, key))
    return out
