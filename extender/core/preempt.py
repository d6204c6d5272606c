"""GPU-aware preemption: per candidate node, the fewest lower-priority pods whose eviction lets
the pod fit on the GPUs it can use, or no victims at all (the node is dropped).

kube-scheduler's dry run (in-tree filters only) knows node-level totals, so its victims are often
one pod on each GPU, which frees room on neither. This module decides again, per node, from the
inventory's per-GPU books, and may name any pod on the node.

The algorithm, for one node row of the snapshot:

1. **Never**: the pod's fit on the node as it is says *unresolvable* (a type it does not accept,
   a protected type, MIG partitions it did not ask for, GPUs too small, unhealthy): no eviction
   helps, the node is dropped (``Drop.NEVER``).
2. **Pool**: the pods that may be evicted, each one *eligible* (``shield`` is ``None``): a
   priority strictly below the preemptor's, not terminating, not finished, not a DaemonSet pod,
   not a static/mirror pod, not inside a bind in flight (a holding not yet seen through the
   API), known to the watch. For a MIG request the pool holds only pods whose every grant is an
   instance of the requested profile (static layouts: freeing another profile's slots never
   yields this profile's placements); for any other request, pods holding a non-MIG grant.
3. **Enough at all?** The fit with the whole pool evicted; if the pod still does not fit, the
   node is dropped (``Drop.INSUFFICIENT``).
4. **Fewest**: for k = 1, 2, ...: every set of k pool pods is tried by the fit kernel itself on a
   what-if copy of the node (their grants given back), all sets of one size in one call; the
   first k with a set that fits wins. Requests that need one GPU (a VRAM share, a fraction, one
   replica or one whole GPU) try only sets whose pods all touch one GPU (the one it will use:
   a victim elsewhere frees nothing for it). Past ``max_sets`` sets of one size the search is
   greedy instead: pool pods in preference order are added until the pod fits, then each one is
   dropped again (highest priority, oldest first) while the rest still suffices.
5. **Order** among the sets of that size that fit: lowest top priority, then lowest priority
   sum, then newest (largest sum of start times), then UIDs (deterministic).

The answer adds kube-scheduler's own victims that hold no GPU on the node and are eligible:
those were chosen by the dry run for CPU, memory or pod-count room, which this module does not
model. A node whose pod already fits on its GPUs with no GPU victim and that has no such other
victim is dropped (``Drop.FITS``): kube-scheduler 1.36 rejects an empty victim list.

``NumPDBViolations`` is 0 for every node: the extender watches no PodDisruptionBudget, and
kube-scheduler's preemption deletes victims without the eviction API, so a budget only weighs
in kube's choice between candidate nodes. The count is documented as unknown (0), not guessed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from extender.core.fit import fit
from extender.core.reasons import VERDICT_BY_CODE, Reason
from extender.core.request import PlacementRequest
from extender.inventory.layout import span_mask
from extender.inventory.snapshot import ClusterSnapshot, RowCache
from extender.model import Assignment, RequestKind, Verdict

_G = TypeVar("_G", bound=np.generic)

MAX_SETS = 4096
"""Victim sets of one size tried exactly before the search turns greedy."""


class Shield(StrEnum):
    """Why a pod on the node may not be a victim."""

    PRIORITY = "equal or higher priority"
    TERMINATING = "terminating"
    FINISHED = "finished"
    DAEMON_SET = "DaemonSet pod"
    STATIC = "static (mirror) pod"
    BIND_IN_FLIGHT = "bind in flight"
    UNKNOWN = "not known to the watch"


class Drop(StrEnum):
    """Why a candidate node gets no victims (it leaves the answer)."""

    UNKNOWN_NODE = "node not in the GPU inventory"
    NEVER = "the pod can never use this node"
    INSUFFICIENT = "evicting every eligible pod does not free enough"
    FITS = "the pod fits the GPUs without evicting any"


@dataclass(frozen=True)
class PodOnNode:
    """One pod on a candidate node, as the preemption decision sees it."""

    uid: str
    priority: int
    started: float = 0.0
    """Start (or creation) time, seconds since the epoch: larger is newer."""
    assignment: Assignment | None = None
    """What it holds on this node (``None``: no GPU)."""
    cpu_milli: int = 0
    memory_mib: int = 0
    shield: Shield | None = None
    """Set when something other than priority protects it (terminating, DaemonSet...)."""
    in_tree: bool = False
    """kube-scheduler named it among its own victims."""


@dataclass(frozen=True)
class NodeVictims:
    """The decision for one node: victims (UIDs, best first) or why none."""

    node: str
    victims: tuple[str, ...] = ()
    drop: Drop | None = None
    num_pdb_violations: int = 0
    gpu_victims: int = 0
    """How many of ``victims`` hold GPUs (the rest are kube's own CPU/memory victims)."""


@dataclass(frozen=True)
class _Delta:
    """What evicting one pod gives back on its node row."""

    free_mib: npt.NDArray[np.int64]
    pods: npt.NDArray[np.int64]
    replicas: npt.NDArray[np.int64]
    mig_clear: npt.NDArray[np.uint8]
    slots: frozenset[int]
    cpu: int = 0
    memory: int = 0


def shield_of(pod: PodOnNode, preemptor_priority: int) -> Shield | None:
    """``None`` if ``pod`` may be evicted for a pod of ``preemptor_priority``."""
    if pod.shield is not None:
        return pod.shield
    if pod.priority >= preemptor_priority:
        return Shield.PRIORITY
    return None


def preempt(snapshot: ClusterSnapshot, placement: PlacementRequest, preemptor_priority: int,
            candidates: Mapping[str, Sequence[PodOnNode]], *, check_cpu_memory: bool = False,
            max_sets: int = MAX_SETS) -> list[NodeVictims]:
    """The decision for every candidate node (in the order given)."""
    return [_node(snapshot, placement, preemptor_priority, node, pods,
                  check_cpu_memory=check_cpu_memory, max_sets=max_sets)
            for node, pods in candidates.items()]


def _node(snapshot: ClusterSnapshot, placement: PlacementRequest, priority: int, node: str,
          pods: Sequence[PodOnNode], *, check_cpu_memory: bool, max_sets: int) -> NodeVictims:
    row = snapshot.node_index.get(node)
    if row is None or not snapshot.node_valid[row]:
        return NodeVictims(node, drop=Drop.UNKNOWN_NODE)
    eligible = [p for p in pods if shield_of(p, priority) is None]
    others = tuple(p.uid for p in eligible if p.in_tree and not _grants(p))
    mig = placement.kind is RequestKind.MIG
    pool = [p for p in eligible if _in_pool(p, placement, mig)]
    slot_of = {int(i): s for s, i in enumerate(snapshot.gpu_index[row].tolist()) if i >= 0}
    deltas = [_delta(snapshot, row, p, slot_of) for p in pool]
    probe = _Probe(snapshot, row, placement, check_cpu_memory, deltas)

    base = probe.codes([()])[0]
    if VERDICT_BY_CODE[base] == Verdict.UNRESOLVABLE.value:
        return NodeVictims(node, drop=Drop.NEVER)
    if base == Reason.FITS:
        chosen: tuple[int, ...] = ()
    else:
        if not pool or probe.codes([tuple(range(len(pool)))])[0] != Reason.FITS:
            return NodeVictims(node, drop=Drop.INSUFFICIENT)
        chosen = _fewest(probe, pool, deltas, _one_gpu(placement), max_sets)
    if not chosen and not others:
        return NodeVictims(node, drop=Drop.FITS)
    victims = tuple(pool[i].uid for i in chosen) + tuple(u for u in others)
    return NodeVictims(node, victims, gpu_victims=len(chosen))


def _grants(pod: PodOnNode) -> bool:
    return pod.assignment is not None and bool(pod.assignment.grants)


def _in_pool(pod: PodOnNode, placement: PlacementRequest, mig: bool) -> bool:
    if pod.assignment is None or not pod.assignment.grants:
        return False
    grants = pod.assignment.grants
    if mig:
        return all(g.mig_profile == placement.request.mig_profile for g in grants)
    return any(g.mig_profile is None for g in grants)


def _one_gpu(placement: PlacementRequest) -> bool:
    return placement.kind in (RequestKind.VRAM, RequestKind.FRACTION) or placement.count == 1


def _delta(snapshot: ClusterSnapshot, row: int, pod: PodOnNode,
           slot_of: Mapping[int, int]) -> _Delta:
    width = snapshot.n_gpus
    free = np.zeros(width, dtype=np.int64)
    count = np.zeros(width, dtype=np.int64)
    replicas = np.zeros(width, dtype=np.int64)
    clear = np.zeros(width, dtype=np.uint8)
    slots: set[int] = set()
    assert pod.assignment is not None
    for grant in pod.assignment.grants:
        slot = slot_of.get(grant.index)
        if slot is None:
            continue  # the books never counted it here (the store reports such a conflict)
        slots.add(slot)
        free[slot] += grant.vram_mib
        count[slot] += 1
        if grant.replica:
            replicas[slot] += 1
        if grant.mig_profile is not None and grant.mig_start >= 0:
            clear[slot] |= span_mask(grant.mig_start, grant.mig_slices)
    return _Delta(free, count, replicas, clear, frozenset(slots), pod.cpu_milli,
                  pod.memory_mib)


class _Probe:
    """The fit kernel on what-if copies of one node row, one copy per victim set: the sets'
    deltas are summed by fancy indexing over stacked per-pod deltas (a zero row pads sets of
    fewer members), so building ``m`` copies costs a few array operations, not a loop."""

    def __init__(self, snapshot: ClusterSnapshot, row: int, placement: PlacementRequest,
                 check_cpu_memory: bool, deltas: Sequence[_Delta]) -> None:
        self._snapshot = snapshot
        self._row = row
        self._placement = placement
        self._check = check_cpu_memory
        n, width = len(deltas), snapshot.n_gpus
        self._pad = n
        self._free = np.zeros((n + 1, width), dtype=np.int64)
        self._pods = np.zeros((n + 1, width), dtype=np.int64)
        self._replicas = np.zeros((n + 1, width), dtype=np.int64)
        self._clear = np.zeros((n + 1, width), dtype=np.uint8)
        self._cpu = np.zeros(n + 1, dtype=np.int64)
        self._memory = np.zeros(n + 1, dtype=np.int64)
        for i, d in enumerate(deltas):
            self._free[i], self._pods[i], self._replicas[i] = d.free_mib, d.pods, d.replicas
            self._clear[i], self._cpu[i], self._memory[i] = d.mig_clear, d.cpu, d.memory

    def codes(self, sets: Sequence[tuple[int, ...]]) -> npt.NDArray[np.int8]:
        """The fit's ``Reason`` per set (indices into the deltas)."""
        s, row, m = self._snapshot, self._row, len(sets)
        width = max((len(members) for members in sets), default=0) or 1
        index = np.full((m, width), self._pad, dtype=np.intp)
        for i, members in enumerate(sets):
            index[i, :len(members)] = members

        def rows(array: npt.NDArray[_G]) -> npt.NDArray[_G]:
            return np.ascontiguousarray(np.repeat(array[row:row + 1], m, axis=0))

        free = s.free_mib[row].astype(np.int64) + self._free[index].sum(axis=1)
        pods = s.pods[row].astype(np.int64) - self._pods[index].sum(axis=1)
        replicas = s.replicas_free[row].astype(np.int64) + self._replicas[index].sum(axis=1)
        used = s.mig_used[row] & ~np.bitwise_or.reduce(self._clear[index], axis=1)
        what_if = replace(
            s, generation=-1, node_names=tuple(f"what-if-{i}" for i in range(m)),
            node_index={}, nodes={}, node_valid=np.ones(m, dtype=bool),
            node_version=np.zeros(m, dtype=np.int64),
            cpu_free=int(s.cpu_free[row]) + self._cpu[index].sum(axis=1),
            memory_free=int(s.memory_free[row]) + self._memory[index].sum(axis=1),
            gpu_type=rows(s.gpu_type), gpu_index=rows(s.gpu_index),
            total_mib=rows(s.total_mib), free_mib=np.ascontiguousarray(free, dtype=np.int32),
            replicas=rows(s.replicas),
            replicas_free=np.ascontiguousarray(replicas, dtype=np.int16),
            replicas_shared=rows(s.replicas_shared), mig_layout=rows(s.mig_layout),
            mig_used=np.ascontiguousarray(used, dtype=np.uint8), healthy=rows(s.healthy),
            pods=np.ascontiguousarray(pods, dtype=np.int16),
            # every per-node array is the candidate's row m times over, this one too: the fit
            # of a share reads it (a DRA node's GPUs take no share), and the inventory's has a
            # row per node, not per set
            node_dra=rows(s.node_dra) if s.node_dra.shape[0] else s.node_dra,
            cache=RowCache(max_keys=1))
        result = fit(what_if, self._placement, np.arange(m, dtype=np.int64),
                     check_cpu_memory=self._check)
        return result.code


def _preference(pool: Sequence[PodOnNode], members: tuple[int, ...]
                ) -> tuple[int, int, float, tuple[str, ...]]:
    """Smaller is better: lowest top priority, lowest sum, newest, then UIDs."""
    priorities = [pool[i].priority for i in members]
    return (max(priorities), sum(priorities), -sum(pool[i].started for i in members),
            tuple(sorted(pool[i].uid for i in members)))


def _fewest(probe: _Probe, pool: Sequence[PodOnNode], deltas: Sequence[_Delta],
            one_gpu: bool, max_sets: int) -> tuple[int, ...]:
    groups: list[list[int]]
    if one_gpu:
        slots = sorted({s for d in deltas for s in d.slots})
        groups = [[i for i, d in enumerate(deltas) if slot in d.slots] for slot in slots]
    else:
        groups = [list(range(len(pool)))]
    for k in range(1, len(pool) + 1):
        total = sum(math.comb(len(g), k) for g in groups)
        if total == 0:
            break
        if total > max_sets:
            return _greedy(probe, pool, deltas, groups)
        sets = sorted({c for g in groups for c in itertools.combinations(g, k)})
        codes = probe.codes(sets)
        fitting = [c for c, code in zip(sets, codes.tolist(), strict=True)
                   if code == Reason.FITS]
        if fitting:
            best = min(fitting, key=lambda c: _preference(pool, c))
            return tuple(sorted(best, key=lambda i: (pool[i].priority, -pool[i].started)))
    return _greedy(probe, pool, deltas, groups)


def _greedy(probe: _Probe, pool: Sequence[PodOnNode], deltas: Sequence[_Delta],
            groups: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Add pods in preference order (lowest priority, newest) until the pod fits, per group;
    then drop each (highest priority, oldest first) that the rest does without. The best
    group's set wins."""
    found: list[tuple[int, ...]] = []
    for group in groups:
        order = sorted(group, key=lambda i: (pool[i].priority, -pool[i].started, pool[i].uid))
        prefixes = [tuple(order[:k]) for k in range(1, len(order) + 1)]
        codes = probe.codes(prefixes)
        first = next((p for p, c in zip(prefixes, codes.tolist(), strict=True)
                      if c == Reason.FITS), None)
        if first is None:
            continue
        kept = list(first)
        for i in reversed(first):
            trial = tuple(j for j in kept if j != i)
            if trial and probe.codes([trial])[0] == Reason.FITS:
                kept = list(trial)
        found.append(tuple(kept))
    if not found:
        return ()
    return min(found, key=lambda c: (len(c), _preference(pool, c)))
