"""Static MIG layouts rebuilt from a node's per-profile instance counts.

The device plugin's mixed strategy advertises only totals (``nvidia.com/mig-1g.10gb: 16``), not
which physical GPU carries which instance. This module finds one layout per physical GPU that
adds up to exactly those totals, with every instance at a legal NVML placement, so that the
per-GPU books are as the GPUs really are.

A greedy "largest first at the lowest start" packing is wrong for NVIDIA's own layouts: on
mig-parted's ``all-balanced`` (1g, 1g, 2g, 3g on one A100), it puts the 3g at slot 0, the 2g at
slot 4, one 1g at slot 6 and finds no legal start for the other 1g, so a phantom second GPU is
made up. The search here is exact:

1. every *configuration* one GPU can hold (a multiset of the wanted profiles with a legal
   placement of each instance) is enumerated once: at most a few hundred for an 8-slot GPU;
2. the totals are covered by exactly ``gpus`` non-empty configurations (depth first,
   configurations in a fixed order so no permutation is tried twice, failures memoised, branches
   pruned by what the GPUs left can hold); a uniform split (the same
   configuration on every GPU, as mig-parted applies one) is tried first.

When the physical GPU count is unknown, the fewest GPUs that can hold the totals are used.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.catalog.types import MigProfile

# Configurations tried, over all searches of one node, before the exact search gives up on
# pathological totals (thousands of instances over hundreds of GPUs) and packs first-fit: tens
# of milliseconds at most. Real nodes (8 GPUs, up to 56 instances) need a few hundred.
SEARCH_BUDGET = 50_000

Placement = tuple[tuple[str, int], ...]
"""One GPU's instances: ``(profile name, start slot)``, in start order."""


@dataclass(frozen=True)
class MigPacking:
    """The layouts found (one per physical GPU) and what disagreed on the way."""

    layouts: tuple[Placement, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class _Config:
    counts: tuple[int, ...]  # instances per wanted profile
    placement: Placement
    slices: int


def pack(slots: int, wanted: Mapping[MigProfile, int], gpus: int | None = None) -> MigPacking:
    """Layouts for ``wanted`` (profile -> instances) on ``gpus`` physical GPUs of ``slots``
    memory slots each, or on the fewest that can hold them when ``gpus`` is None.

    A stated GPU count that cannot hold the totals is reported, and the fewest GPUs that can are
    used instead; more GPUs than needed get empty layouts (MIG enabled, no instances), reported.
    """
    profiles = tuple(sorted((p for p, n in wanted.items() if n > 0), key=_profile_order))
    if not profiles:
        return MigPacking((), ())
    target = tuple(wanted[p] for p in profiles)
    search = _CoverSearch(slots, profiles, _configurations(slots, profiles, target))
    fewest = search.lower_bound(target)
    problems: list[str] = []
    try:
        if gpus is not None and gpus > 0:
            # As many of the stated GPUs as the instances can fill, the rest left empty.
            for filled in range(gpus, fewest - 1, -1):
                found = search.cover(target, filled)
                if found is not None:
                    if filled < gpus:
                        problems.append(f"{gpus} GPU(s) stated, but the MIG instances fill only "
                                        f"{filled}; the other {gpus - filled} read as "
                                        "MIG-enabled with no instances")
                    empty: Placement = ()
                    return MigPacking(found + (empty,) * (gpus - filled), tuple(problems))
            problems.append(f"{gpus} GPU(s) stated, but the advertised MIG instances ("
                            + _describe(profiles, target) + ") need more; read as the fewest "
                            "GPUs that hold them")
        for count in range(max(fewest, (gpus or 0) + 1), sum(target) + 1):
            found = search.cover(target, count)
            if found is not None:
                return MigPacking(found, tuple(problems))
    except _BudgetExhaustedError:
        pass
    problems.append("no exact layout found for " + _describe(profiles, target)
                    + f" within {SEARCH_BUDGET} steps; packed first-fit, which may differ from "
                    "the GPUs (the node agent's gpus annotation describes them exactly)")
    return MigPacking(_first_fit(slots, profiles, target), tuple(problems))


PackKey = tuple[int, frozenset[tuple[MigProfile, int]], int | None]


class PackCache:
    """``pack`` remembered on its inputs, least recently used first out, at most ``size``
    entries: a node decode packs on every watch event of a node advertising MIG counts, and a
    cluster has few distinct (geometry, counts, GPUs) combinations. The answers are immutable,
    so one is shared by every decode that asks the same. Owned by a ``NodeDecoder``; safe to
    call from several threads (two threads missing at once both compute; the later, equal
    answer is kept)."""

    def __init__(self, size: int = 256) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, not {size}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[PackKey, MigPacking] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def pack(self, slots: int, wanted: Mapping[MigProfile, int],
             gpus: int | None = None) -> MigPacking:
        """``pack(slots, wanted, gpus)``, from memory when it was asked before."""
        key: PackKey = (slots, frozenset(wanted.items()), gpus)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        packing = pack(slots, wanted, gpus)
        with self._lock:
            self._entries[key] = packing
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return packing


class _BudgetExhaustedError(Exception):
    """The depth-first search tried more than ``SEARCH_BUDGET`` configurations."""


def _profile_order(profile: MigProfile) -> tuple[int, int, str]:
    # Larger profiles first, and among equal sizes the one with fewer legal starts first: the
    # enumeration then meets the most constrained instances early.
    return (-profile.slices, len(profile.starts), profile.name)


def _describe(profiles: Sequence[MigProfile], target: Sequence[int]) -> str:
    return ", ".join(f"{n} x {p.name}" for p, n in zip(profiles, target, strict=True))


def _configurations(slots: int, profiles: tuple[MigProfile, ...],
                    target: tuple[int, ...]) -> tuple[_Config, ...]:
    """Every distinct instance multiset one GPU can hold, each with one legal placement,
    fullest first (the empty configuration last)."""
    full = (1 << slots) - 1
    best: dict[tuple[int, ...], Placement] = {}

    def place(used: int, counts: list[int], chosen: list[tuple[str, int]], lowest: int) -> None:
        key = tuple(counts)
        if key not in best:
            best[key] = tuple(sorted(chosen, key=lambda item: item[1]))
        # Instances are added in (profile, start) order, each after the previous one, so every
        # placement set is generated once.
        for k in range(lowest, len(profiles)):
            profile = profiles[k]
            if counts[k] >= target[k]:
                continue
            span = (1 << profile.slices) - 1
            floor = chosen[-1][1] if chosen and k == lowest and chosen[-1][0] == profile.name \
                else -1
            for start in profile.starts:
                if start <= floor or used & (span << start) or (span << start) & ~full:
                    continue
                counts[k] += 1
                chosen.append((profile.name, start))
                place(used | span << start, counts, chosen, k)
                chosen.pop()
                counts[k] -= 1

    place(0, [0] * len(profiles), [], 0)
    configs = [_Config(counts, placement, sum(p.slices * n for p, n in
                                              zip(profiles, counts, strict=True)))
               for counts, placement in best.items()]
    configs.sort(key=lambda c: (-c.slices, [-n for n in c.counts]))
    return tuple(configs)


class _CoverSearch:
    """Exact covers of instance totals by per-GPU configurations, one budget for all of them.

    ``cover(target, gpus)`` tries the same configuration on every GPU first (mig-parted applies
    one layout to every GPU), then depth first with configurations in a fixed order (each cover
    is tried once, not once per permutation), pruned by what ``gpus`` GPUs can still hold.
    """

    def __init__(self, slots: int, profiles: tuple[MigProfile, ...],
                 configs: tuple[_Config, ...]) -> None:
        self._slots = slots
        self._spans = tuple(p.slices for p in profiles)
        self._configs = tuple(c for c in configs if c.slices)  # the empty one never helps
        self._most = tuple(max((c.counts[k] for c in self._configs), default=0)
                           for k in range(len(profiles)))
        self._steps = 0
        self._failed: set[tuple[tuple[int, ...], int, int]] = set()

    def lower_bound(self, target: tuple[int, ...]) -> int:
        """No fewer GPUs than the instances' slots need, nor than the most instances of one
        profile one GPU holds allows."""
        bound = max(1, -(-self._slices(target) // self._slots))
        for wanted, most in zip(target, self._most, strict=True):
            if wanted and not most:
                raise _BudgetExhaustedError  # a profile no single GPU can hold: nothing to search
            if most:
                bound = max(bound, -(-wanted // most))
        return bound

    def cover(self, target: tuple[int, ...], gpus: int) -> tuple[Placement, ...] | None:
        if all(n % gpus == 0 for n in target):
            share = tuple(n // gpus for n in target)
            uniform = next((c for c in self._configs if c.counts == share), None)
            if uniform is not None:
                return (uniform.placement,) * gpus
        found = self._solve(target, gpus, 0)
        return None if found is None else tuple(self._configs[i].placement for i in found)

    def _slices(self, counts: tuple[int, ...]) -> int:
        return sum(n * span for n, span in zip(counts, self._spans, strict=True))

    def _hopeless(self, remaining: tuple[int, ...], left: int) -> bool:
        if self._slices(remaining) > left * self._slots or sum(remaining) < left:
            return True
        return any(n > left * most for n, most in zip(remaining, self._most, strict=True))

    def _solve(self, remaining: tuple[int, ...], left: int, first: int) -> tuple[int, ...] | None:
        if left == 0:
            return () if not any(remaining) else None
        key = (remaining, left, first)
        if key in self._failed or self._hopeless(remaining, left):
            return None
        for position in range(first, len(self._configs)):
            self._steps += 1
            if self._steps > SEARCH_BUDGET:
                raise _BudgetExhaustedError
            config = self._configs[position]
            rest = tuple(r - c for r, c in zip(remaining, config.counts, strict=True))
            if min(rest) < 0:
                continue
            tail = self._solve(rest, left - 1, position)
            if tail is not None:
                return (position, *tail)
        self._failed.add(key)
        return None


def _first_fit(slots: int, profiles: Sequence[MigProfile],
               target: Sequence[int]) -> tuple[Placement, ...]:
    """Each instance, largest first, at the lowest free legal start of the first GPU with
    room: fast and usually right, used only when the exact search gives up."""
    full = (1 << slots) - 1
    gpus: list[tuple[int, list[tuple[str, int]]]] = []  # (used slot mask, instances)
    for profile, count in zip(profiles, target, strict=True):
        span = (1 << profile.slices) - 1
        legal = [s for s in profile.starts if not (span << s) & ~full]
        for _ in range(count):
            for g, (used, instances) in enumerate(gpus):
                start = next((s for s in legal if not used & (span << s)), None)
                if start is not None:
                    gpus[g] = (used | span << start, [*instances, (profile.name, start)])
                    break
            else:
                gpus.append((span << legal[0], [(profile.name, legal[0])]))
    return tuple(tuple(sorted(instances, key=lambda item: item[1])) for _, instances in gpus)
