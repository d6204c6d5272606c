"""The accelerator catalog: canonical ids, families, aliases and per-type numpy tables.

Names are matched exactly after normalization (lower case, ``_`` and spaces become ``-``), never
by substring: ``a10`` is not ``a100`` and ``l4`` is not ``l40s`` (HAMi's substring match gets both
wrong). Types are numbered in catalog order; the index is what the inventory stores per GPU. One
extra index, ``unknown_index`` (= ``len(types)``), stands for a GPU whose model the catalog does
not know: it is protected, priced like the most expensive type, and no pod can ask for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.catalog.types import AcceleratorType, MigProfile


def normalize_name(name: str) -> str:
    """The one spelling used for lookups: ``NVIDIA A100_SXM4`` -> ``nvidia-a100-sxm4``."""
    return "-".join(name.strip().lower().replace("_", " ").split())


@dataclass(frozen=True)
class MigTables:
    """Per (profile name, type) MIG geometry as arrays, for the vectorized fit.

    Shapes: ``(n_profiles, n_types + 1)``; a type without that profile has ``slices == 0``.
    """

    names: tuple[str, ...]
    index: dict[str, int]
    slices: npt.NDArray[np.int8]
    start_mask: npt.NDArray[np.uint8]
    memory_mib: npt.NDArray[np.int64]


class Catalog:
    """Immutable index over a list of ``AcceleratorType`` (validated beforehand by config)."""

    def __init__(self, types: Sequence[AcceleratorType]) -> None:
        self.types: tuple[AcceleratorType, ...] = tuple(types)
        self.unknown_index = len(self.types)
        self._by_id = {t.id: i for i, t in enumerate(self.types)}
        self._names: dict[str, frozenset[int]] = {}
        for i, accel in enumerate(self.types):
            for name in (accel.id, *accel.aliases):
                self._add_name(name, i)
        families: dict[str, set[int]] = {}
        for i, accel in enumerate(self.types):
            families.setdefault(normalize_name(accel.family), set()).add(i)
        for family, members in families.items():
            # A family name that is also a type id (``t4``) resolves to the union.
            self._names[family] = frozenset(members | self._names.get(family, frozenset()))
        self.families = {family: frozenset(m) for family, m in families.items()}

        n = len(self.types) + 1
        prices = [t.price for t in self.types]
        self.price = np.array([*prices, max(prices, default=0.0)], dtype=np.float64)
        self.protected = np.array([t.protected for t in self.types] + [True], dtype=bool)
        self.memory_mib = np.array([t.memory_mib for t in self.types] + [0], dtype=np.int64)
        self.mig_slots = np.array(
            [t.mig.slots if t.mig else 0 for t in self.types] + [0], dtype=np.int8
        )
        self.mig = self._build_mig_tables(n)

    def _add_name(self, name: str, index: int) -> None:
        key = normalize_name(name)
        self._names[key] = self._names.get(key, frozenset()) | {index}

    def _build_mig_tables(self, n_types: int) -> MigTables:
        names: list[str] = []
        for accel in self.types:
            for profile in accel.mig.profiles if accel.mig else ():
                if profile.name not in names:
                    names.append(profile.name)
        slices = np.zeros((len(names), n_types), dtype=np.int8)
        start_mask = np.zeros((len(names), n_types), dtype=np.uint8)
        memory = np.zeros((len(names), n_types), dtype=np.int64)
        index = {name: p for p, name in enumerate(names)}
        for t, accel in enumerate(self.types):
            for profile in accel.mig.profiles if accel.mig else ():
                p = index[profile.name]
                slices[p, t] = profile.slices
                start_mask[p, t] = profile.start_mask
                memory[p, t] = profile.memory_mib
        return MigTables(tuple(names), index, slices, start_mask, memory)

    # -- lookups -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.types)

    def index_of(self, type_id: str) -> int:
        """Index of a canonical id; ``KeyError`` if unknown."""
        return self._by_id[type_id]

    def id_of(self, index: int) -> str:
        return self.types[index].id if index < len(self.types) else "unknown"

    def resolve(self, name: str) -> frozenset[int] | None:
        """Type indices a pod means by ``name`` (id, family or alias); ``None`` if unknown."""
        return self._names.get(normalize_name(name))

    def resolve_node_type(self, name: str, memory_mib: int | None = None) -> int | None:
        """The one type a node label names.

        A family or ambiguous alias (Karpenter says ``a100`` for both sizes) is narrowed by the
        node's memory label when there is one (nearest memory wins), else to its smallest-memory
        member: assuming less VRAM never over-commits a GPU.
        """
        members = self.resolve(name)
        if not members:
            return None
        if len(members) == 1:
            return next(iter(members))
        ordered = sorted(members, key=lambda i: (self.types[i].memory_mib, i))
        if memory_mib is None or memory_mib <= 0:
            return ordered[0]
        return min(ordered, key=lambda i: (abs(self.types[i].memory_mib - memory_mib), i))

    def accepted_names(self) -> list[str]:
        """Every spelling a pod may use, for error messages (ids and families first)."""
        ids = sorted({t.id for t in self.types} | set(self.families))
        return ids

    def mig_profile(self, type_index: int, name: str) -> MigProfile | None:
        if type_index >= len(self.types):
            return None
        mig = self.types[type_index].mig
        return mig.profile(name) if mig else None

    def types_with_mig_profile(self, name: str) -> frozenset[int]:
        p = self.mig.index.get(name)
        if p is None:
            return frozenset()
        return frozenset(int(t) for t in np.flatnonzero(self.mig.slices[p]))

    def mask(self, indices: Iterable[int]) -> npt.NDArray[np.bool_]:
        """Boolean mask of shape ``(n_types + 1,)`` selecting ``indices``."""
        out = np.zeros(len(self.types) + 1, dtype=bool)
        out[list(indices)] = True
        return out

    def describe(self, indices: Iterable[int]) -> str:
        return ", ".join(sorted(self.id_of(i) for i in indices))
