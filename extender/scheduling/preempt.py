"""Preempt (``POST /preempt``): kube-scheduler's candidate nodes and its victims in, per node
the victims the per-GPU books call for (``core/preempt.py``) out.

The pods on each candidate node come from the inventory's holdings there (what each holds),
the watch's eviction facts (``sync/pod_facts.py``: priority, age, terminating, finished,
DaemonSet, static) and kube's own victims (they may hold no GPU). A holding not yet seen through
the API (``ASSUMED``, ``BOUND``) is a bind in flight and never a victim; a pod the watch does
not know is never a victim either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from extender.core.preempt import NodeVictims, PodOnNode, Shield, preempt
from extender.inventory.store import Holding, HoldingState, Inventory
from extender.kube.eviction import EvictionFacts, eviction_facts
from extender.scheduling.cycle import CycleTable
from extender.sync.pod_facts import PodFacts


class PreemptDecision(Enum):
    """The closed set of preempt outcomes; the value is the metric label."""

    VICTIMS = "victims"
    """At least one node keeps a victim list."""
    NONE = "none"
    """Every candidate node was dropped: nothing is evicted."""
    PASSTHROUGH = "passthrough"
    """The pod asks for no GPU: kube's candidates are answered as they came."""
    INVALID_REQUEST = "invalid_request"
    """The pod's GPU request is invalid: no node (it fits nowhere, evicting helps nothing)."""
    NOT_SYNCED = "not_synced"
    """The inventory has not listed the cluster yet: no node (evict nothing blind)."""


@dataclass(frozen=True, eq=False)
class PreemptOutcome:
    decision: PreemptDecision
    nodes: Sequence[NodeVictims]
    """Every candidate's decision (dropped ones included), in kube's order."""


class Preempt:
    def __init__(self, inventory: Inventory, cycles: CycleTable, facts: PodFacts, *,
                 check_cpu_memory: bool = False) -> None:
        self._inventory = inventory
        self._cycles = cycles
        self._facts = facts
        self._check_cpu_memory = check_cpu_memory

    def __call__(self, pod: Mapping[str, Any],
                 candidates: Mapping[str, Sequence[str]]) -> PreemptOutcome:
        """``candidates``: node -> UIDs of kube's victims there."""
        passed = [NodeVictims(node, tuple(uids), gpu_victims=0)
                  for node, uids in candidates.items() if uids]
        if not self._inventory.has_synced():
            return PreemptOutcome(PreemptDecision.NOT_SYNCED, [])
        cycle = self._cycles.detached(pod)
        placement = cycle.pod.placement
        if cycle.pod.error is not None:
            return PreemptOutcome(PreemptDecision.INVALID_REQUEST, [])
        if placement is None:
            return PreemptOutcome(PreemptDecision.PASSTHROUGH, passed)
        snapshot = self._inventory.snapshot()
        holdings: dict[str, dict[str, Holding]] = {node: {} for node in candidates}
        for holding in self._inventory.holdings():
            on = holdings.get(holding.node)
            if on is not None:
                on[holding.key.uid] = holding
        facts = self._facts.on_nodes(candidates)
        pods = {node: _pods_on(node, holdings[node], facts[node], set(uids))
                for node, uids in candidates.items()}
        priority = eviction_facts(pod).priority
        nodes = preempt(snapshot, placement, priority, pods,
                        check_cpu_memory=self._check_cpu_memory)
        decision = PreemptDecision.VICTIMS if any(n.victims for n in nodes) else \
            PreemptDecision.NONE
        return PreemptOutcome(decision, nodes)



def _pods_on(node: str, holdings: Mapping[str, Holding], facts: Mapping[str, EvictionFacts],
             in_tree: set[str]) -> list[PodOnNode]:
    """Every pod on ``node``: those holding GPUs there, those the watch knows, kube's victims."""
    uids = sorted(set(holdings) | set(facts) | in_tree)
    return [_pod(uid, node, holdings.get(uid), facts.get(uid), uid in in_tree) for uid in uids]


def _pod(uid: str, node: str, holding: Holding | None, facts: EvictionFacts | None,
         in_tree: bool) -> PodOnNode:
    assignment = holding.assignment if holding is not None and holding.node == node else None
    cpu = holding.cpu_milli if holding is not None else 0
    memory = holding.memory_mib if holding is not None else 0
    if facts is None:
        return PodOnNode(uid, 0, 0.0, assignment, cpu, memory, Shield.UNKNOWN, in_tree)
    return PodOnNode(uid, facts.priority, facts.started, assignment, cpu, memory,
                     _shield(holding, facts), in_tree)


def _shield(holding: Holding | None, facts: EvictionFacts) -> Shield | None:
    if facts.finished:
        return Shield.FINISHED
    if facts.terminating:
        return Shield.TERMINATING
    if facts.daemon_set:
        return Shield.DAEMON_SET
    if facts.static:
        return Shield.STATIC
    if holding is not None and holding.state is not HoldingState.OBSERVED:
        return Shield.BIND_IN_FLIGHT
    return None
