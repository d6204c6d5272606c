"""Where two settings of one strategy part ways: the decisions that differ, pod by pod.

Details: one replay runs under the scenario's platform (the *main* setting) and, on every
arrival, also asks a *shadow* strategy (the same policy under another platform config, e.g.
``idlePrice: 0`` against ``1``, or another policy, e.g. FGD) to rank the same snapshot and
the same fit. Where the two
would choose different nodes, a ``Divergence`` records the pod (request, CPU, memory), the
arrived % and both nodes (GPU type, GPUs, whether the node was idle, $/h of the node). The
replay itself follows the main setting only, so every record is a decision on a state that
the main setting produced: the first divergence is the first place the settings differ, and
later ones say where the main setting keeps choosing otherwise.

``summarise`` groups the records by (pod request, main node, shadow node) with counts,
``by_pod`` and ``by_classes`` by the pod alone and by the two node classes alone. The replay is
a ``StrandingReplay``: it also records why the free GPUs are free at 100 % arrived and at the
end (``extender.simulator.stranding``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from extender.core.fit import fit
from extender.core.rowops import row_any
from extender.core.scoring.base import PlacementObserver
from extender.core.workload import WorkloadMix
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment
from extender.platform import Platform
from extender.scheduling.place import place
from extender.simulator.replay import FEEDS, ReplayOptions, _Kind, pick_best, seeds
from extender.simulator.scenario import Scenario
from extender.simulator.stranding import StrandingReplay


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


class ShadowReplay(StrandingReplay):
    """A replay that also records where ``shadow`` (another platform config; the policy
    ``shadow_policy``, by default the main one) would have placed each pod differently.

    A shadow strategy that needs to be told of placements (``PLACEMENTS``, e.g.
    ``gpu-clustering``) is refused: it would be told of the main setting's."""

    def __init__(self, scenario: Scenario, options: ReplayOptions, shadow: Platform,
                 shadow_policy: str | None = None) -> None:
        super().__init__(scenario, options)
        strategy_seed = seeds(options.seed)[3]
        mix = WorkloadMix(prior=scenario.typical.items(),
                          memory_per_gpu=scenario.memory_per_gpu())
        policy = shadow_policy or options.policy
        self.shadow = shadow.strategy(policy, workload=mix, seed=strategy_seed, feeds=FEEDS)
        if isinstance(self.shadow, PlacementObserver):
            raise ValueError(f"shadow policy {policy!r} needs every placement; accepted: a "
                             "policy that ranks from the snapshot alone (fgd, "
                             "cost-fragmentation, best-fit...)")
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


def by_pod(divergences: list[Divergence], top: int = 10) -> list[tuple[str, int]]:
    """(pod, count): the pod shapes the two settings place differently most often."""
    return Counter(d.pod for d in divergences).most_common(top)


def by_classes(divergences: list[Divergence], top: int = 10) -> list[tuple[str, str, int]]:
    """(main node class, shadow node class, count), idle or used included."""
    counts = Counter((d.main.describe(), d.shadow.describe()) for d in divergences)
    return [(main, shadow, n) for (main, shadow), n in counts.most_common(top)]
