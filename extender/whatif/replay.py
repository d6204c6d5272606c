"""What-if on a user's cluster: replay pod manifests against a ``kubectl get nodes,pods -A -o
json`` dump as kube-scheduler with the extender would place them, once per policy.

Each pod goes the way kube-scheduler drives the extender: its in-tree filters first
(``kube.filters``: node selector and affinity, taints, cordon and NotReady, resources, host
ports), then the extender on the nodes they pass (``scheduling.verdict.judge_pod`` ->
``Scheduler.judge``: the service's own decode, inventory, fit and strategy, on one snapshot),
and the pod is bound where ``place`` puts it (``Scheduler.commit``: the hold prioritize would
take and the bind that keeps it). With the default strategy the extender's first choice is the
only node with the top priority (10), which kube-scheduler's weight-100 extender score makes
its choice too; strategies whose scores tie on the wire leave kube-scheduler's own score
plugins to decide, which the what-if does not model (docs/what-if.md).

Pods are placed one after the other, in manifest order, each seeing the GPUs, CPU and ports
the previous ones took; the dump's bound pods hold what they hold. A pod no node takes waits,
with the reasons grouped ("3 nodes: node affinity/selector; 1 node: not enough free GPUs").
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO

from extender.core.assign import taken_fraction
from extender.kube import objects
from extender.kube.filters.nodes import KubeNodes
from extender.kube.filters.reasons import ReasonGroup
from extender.model import GpuRequest
from extender.platform import Platform
from extender.scheduling.verdict import ignored_resources, judge_pod
from extender.sync.offline import ClusterObjects
from extender.whatif.manifests import PodManifest

if TYPE_CHECKING:
    from extender.server.service import ExtenderService


@dataclass(frozen=True)
class Outcome:
    pod: str
    request: str
    owner: str = ""
    node: str = ""
    gpus: tuple[int, ...] = ()
    type_id: str = ""
    gpu_equivalents: float = 0.0
    cost_per_hour: float = 0.0
    waits: str = ""
    """Why no node took it: the reasons, grouped, most nodes first."""
    reasons: tuple[ReasonGroup, ...] = ()
    why: str = ""
    """Why this node (against the runner-up), when placed."""
    runner_up: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "owner": self.owner or None, "request": self.request,
                "node": self.node or None, "gpus": list(self.gpus),
                "type": self.type_id or None,
                "gpuEquivalents": round(self.gpu_equivalents, 4),
                "costPerHour": round(self.cost_per_hour, 4), "why": self.why or None,
                "runnerUp": self.runner_up or None, "waits": self.waits or None,
                "reasons": [{"nodes": len(g.nodes), "rule": g.rule, "message": g.message}
                            for g in self.reasons]}


@dataclass
class PolicyRun:
    policy: str
    outcomes: list[Outcome] = field(default_factory=list)
    allocated_before: float = 0.0
    allocated_after: float = 0.0
    gpus: int = 0
    wall_seconds: float = 0.0

    @property
    def placed(self) -> int:
        return sum(1 for o in self.outcomes if o.node)

    @property
    def cost_per_hour(self) -> float:
        return sum(o.cost_per_hour for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "placed": self.placed,
                "waiting": len(self.outcomes) - self.placed, "gpus": self.gpus,
                "allocatedGpusBefore": round(self.allocated_before, 4),
                "allocatedGpusAfter": round(self.allocated_after, 4),
                "costPerHourOfPlacedPods": round(self.cost_per_hour, 4),
                "wallSeconds": round(self.wall_seconds, 3),
                "pods": [o.to_json() for o in self.outcomes]}


Progress = Callable[[str, int, int], None]


def with_policy(platform: Platform, policy: str) -> Platform:
    config = platform.config
    return replace(platform, config=replace(config, scoring=replace(config.scoring,
                                                                    strategy=policy)))


def what_if(platform: Platform, objects: ClusterObjects, pods: Sequence[PodManifest],
            policies: Sequence[str], *, progress: Progress | None = None,
            ignored: frozenset[str] | None = None) -> list[PolicyRun]:
    """``ignored``: the extended resources kube-scheduler ignores (default: the shipped
    scheduler configs' ``ignoredByScheduler``)."""
    return [_replay(with_policy(platform, policy), policy, objects, pods, progress=progress,
                    ignored=ignored) for policy in policies]


def _replay(platform: Platform, policy: str, objects: ClusterObjects,
            pods: Sequence[PodManifest], *, progress: Progress | None,
            ignored: frozenset[str] | None) -> PolicyRun:
    from extender.server.service import ExtenderService

    began = time.monotonic()
    service = ExtenderService.from_cluster_objects(platform, objects)
    service.start()
    kube = KubeNodes.of(objects.nodes, objects.pods,
                        ignored=ignored_resources() if ignored is None else ignored)
    snapshot = service.inventory.snapshot()
    run = PolicyRun(policy, gpus=int((snapshot.node_valid[:, None] & snapshot.present).sum()),
                    allocated_before=_allocated(service))
    for i, manifest in enumerate(pods):
        run.outcomes.append(place_one(service, kube, manifest))
        if progress is not None:
            progress(policy, i + 1, len(pods))
    run.allocated_after = _allocated(service)
    run.wall_seconds = time.monotonic() - began
    return run


def place_one(service: ExtenderService, kube: KubeNodes, manifest: PodManifest) -> Outcome:
    """Judge one pod (kube-scheduler's filters, then the extender) and bind it where the
    extender would; the inventory and ``kube`` then count it."""
    pod = manifest.pod
    key = f"{objects.namespace(pod)}/{objects.name(pod)}"
    scheduler = service.scheduler
    verdict = judge_pod(scheduler, kube, pod)
    decoded = verdict.judgement.explanation.cycle.pod
    base = Outcome(key, describe_request(service.platform, decoded.request), manifest.owner)
    if decoded.error:
        return replace(base, request="invalid", waits=decoded.error)
    if decoded.placement is None:
        if not verdict.kube.feasible:  # kube-scheduler's filters alone keep it waiting
            return replace(base, waits=verdict.waits(), reasons=tuple(verdict.reasons))
        passing = len(verdict.kube.feasible)
        return replace(base, waits=f"asks for no GPU: kube-scheduler places it alone "
                                   f"({passing} node{'s' if passing != 1 else ''} pass its "
                                   "filters)")
    placement = verdict.judgement.placement
    if placement is None:
        return replace(base, waits=verdict.waits(), reasons=tuple(verdict.reasons))
    node = placement.assignment.node
    bound = scheduler.commit(pod, verdict.judgement)
    if bound.error:
        return replace(base, waits=f"bind to {node} refused: {bound.error}")
    kube.bound(pod, node)
    assignment = placement.assignment
    snapshot = service.inventory.snapshot()
    share = taken_fraction(snapshot, snapshot.node_index[node], assignment.grants)
    catalog = snapshot.catalog
    price = float(catalog.price[catalog.index_of(assignment.type_id)]) \
        if assignment.type_id in {t.id for t in catalog.types} else 0.0
    explained = scheduler.announcer.recorded(objects.uid(pod))
    return replace(base, node=node, gpus=assignment.gpu_indices, type_id=assignment.type_id,
                   gpu_equivalents=share, cost_per_hour=share * price,
                   why=explained.reason() if explained is not None else "",
                   runner_up=explained.runner_up.node if explained is not None
                   and explained.runner_up is not None else "")


def describe_request(platform: Platform, request: GpuRequest | None) -> str:
    if request is None:
        return "no GPU"
    text = str(request.describe())
    if request.types is not None and request.type_source:  # named by the pod
        catalog = platform.catalog
        text += " " + "|".join(sorted(catalog.id_of(t) for t in request.types))
    return text


def _allocated(service: ExtenderService) -> float:
    snapshot = service.inventory.snapshot()
    total = 0.0
    for holding in service.inventory.holdings():
        row = snapshot.node_index.get(holding.node)
        if row is not None and holding.assignment is not None:
            total += taken_fraction(snapshot, row, holding.assignment.grants)
    return total


def stderr_progress(stream: TextIO | None = None, every_seconds: float = 1.0) -> Progress:
    """Progress lines on stderr, at most one a second, and the last one of each policy."""
    last = [0.0]

    def report(policy: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= every_seconds:
            last[0] = now
            print(f"  {policy}: {done}/{total} pods replayed", file=stream or sys.stderr,
                  flush=True)

    return report
