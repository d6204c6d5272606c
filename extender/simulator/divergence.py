"""Where two settings of one strategy part ways: the decisions that differ, pod by pod.

Details: one replay runs under the scenario's platform (the *main* setting) and, on every
arrival, also asks a *shadow* strategy (the same policy under another platform config, e.g.
``idlePrice: 0`` against ``1``) to rank the same snapshot and the same fit. Where the two
would choose different nodes, a ``Divergence`` records the pod (request, CPU, memory), the
arrived % and both nodes (GPU type, GPUs, whether the node was idle, $/h of the node). The
replay itself follows the main setting only, so every record is a decision on a state that
the main setting produced: the first divergence is the first place the settings differ, and
later ones say where the main setting keeps choosing otherwise.

``summarise`` groups the records by (pod request, main node, shadow node) with counts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from extender.core.fit import fit
from extender.core.rowops import row_any
from extender.core.workload import WorkloadMix
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment
from extender.platform import Platform
from extender.scheduling.place import place
from extender.simulator.replay import FEEDS, Replay, ReplayOptions, _Kind, pick_best, seeds
from extender.simulator.scenario import Scenario


@dataclass(frozen=True)
class NodeSide:
    type_id: str
    gpus: int
    idle: bool
    node_price: float
    """$/h of the whole node (sum of its GPUs' catalog prices)."""

    def describe(self) -> str:
        return f"{'idle' if self.idle else 'used'} {self.type_id} x{self.gpus}"


@dataclass(frozen=True)
class Divergence:
    arrival: int
    arrived_pct: float
    pod: str
    main: NodeSide
    shadow: NodeSide


def _side(snapshot: ClusterSnapshot, row: int) -> NodeSide:
    catalog = snapshot.catalog
    types = snapshot.gpu_type[row]
    present = types[types >= 0]
    type_id = catalog.id_of(int(present[0])) if len(present) else "cpu"
    idle = not bool(row_any(snapshot.pods[np.array([row])] > 0)[0])
    price = float(catalog.price[present].sum()) if len(present) else 0.0
    return NodeSide(type_id, len(present), idle, round(price, 4))


class ShadowReplay(Replay):
    """A replay that also records where ``shadow`` (another platform config, same policy)
    would have placed each pod differently."""

    def __init__(self, scenario: Scenario, options: ReplayOptions, shadow: Platform) -> None:
        super().__init__(scenario, options)
        strategy_seed = seeds(options.seed)[3]
        mix = WorkloadMix(prior=scenario.typical.items(),
                          memory_per_gpu=scenario.memory_per_gpu())
        self.shadow = shadow.strategy(options.policy, workload=mix, seed=strategy_seed,
                                      feeds=FEEDS)
        demand = scenario.demand()[self.order]
        self._arrived_pct = np.cumsum(demand) * 100.0 / max(scenario.capacity_milli, 1)
        self.divergences: list[Divergence] = []

    def _place(self, snapshot: ClusterSnapshot, entry: _Kind) -> Assignment | None:
        assignment = super()._place(snapshot, entry)
        if assignment is None:
            return None
        request = entry.request
        verdict = fit(snapshot, request, entry.rows, check_cpu_memory=True)
        other = place(snapshot, request, verdict, self.shadow.score(snapshot, request, verdict),
                      gpus=entry.kind.gpu_pod, pick=lambda s: pick_best(s, None))
        if other is None or other.assignment.node == assignment.node:
            return assignment
        kind = entry.kind
        pod = (f"{kind.request.describe()}, {kind.cpu_milli / 1000:g} CPU, "
               f"{kind.memory_mib / 1024:.0f} GiB")
        self.divergences.append(Divergence(
            self.arrival, round(float(self._arrived_pct[self.arrival]), 2), pod,
            _side(snapshot, snapshot.node_index[assignment.node]), _side(snapshot, other.row)))
        return assignment


def summarise(divergences: list[Divergence], top: int = 20) -> list[tuple[str, str, str, int]]:
    """(pod, main node, shadow node, count), the most frequent first."""
    counts = Counter((d.pod, d.main.describe(), d.shadow.describe()) for d in divergences)
    return [(pod, main, shadow, n) for (pod, main, shadow), n in counts.most_common(top)]
