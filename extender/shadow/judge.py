"""Judge one bind made by another scheduler, on the inventory as it was just before it.

Two questions, both answered by the same core the extender serves with:

- what would gpu-extender have done? ``scheduling.verdict.judge_pod``: kube-scheduler's own
  filters (``kube.filters``: node selector and affinity, taints, cordon, resources, host
  ports) over every node, then ``Scheduler.judge`` on the nodes they pass: the node and GPUs
  ``place`` picks, exactly as the extender's prioritize would (highest strategy score, ties
  to the node whose name sorts first), on one snapshot;
- did the real placement break a per-GPU invariant? The pod's GPUs on its real node are
  inferred exactly as the inventory infers them for pods it did not bind (any type allowed);
  when nothing on that node can hold the pod, the real placement over-commits a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from extender.core.assign import NoFitError, assign
from extender.core.request import PlacementRequest
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Inventory
from extender.kube.filters.nodes import KubeNodes
from extender.model import Assignment, PodInfo, RequestKind
from extender.platform import Platform
from extender.scheduling.scheduler import Scheduler
from extender.scheduling.verdict import judge_pod
from extender.shadow.record import Alternative, Invariant, ShadowRecord, Violation

InferOn = Callable[[ClusterSnapshot, PodInfo], PlacementRequest]
"""The request as the inventory infers a pod bound elsewhere: any type may be what it took."""

_OVER_COMMIT = {RequestKind.WHOLE: Invariant.WHOLE_GPU_SHARED,
                RequestKind.VRAM: Invariant.VRAM_OVER_MEMORY,
                RequestKind.FRACTION: Invariant.VRAM_OVER_MEMORY}


class ShadowJudge:
    def __init__(self, platform: Platform, inventory: Inventory, scheduler: Scheduler, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._platform = platform
        self._inventory = inventory
        self._scheduler = scheduler
        self._clock = clock

    def judge(self, pod: Mapping[str, Any], info: PodInfo, kube: KubeNodes,
              infer: InferOn) -> ShadowRecord:
        """``info`` is the bound pod (``request`` set); ``kube`` the nodes and pods as
        kube-scheduler saw them before this bind."""
        assert info.request is not None
        would = self._alternative(pod, kube)
        snapshot = self._inventory.snapshot()
        violations: list[Violation] = []
        actual: Assignment | None = None
        row = snapshot.node_index.get(info.node_name)
        if row is not None:
            try:
                actual = assign(snapshot, infer(snapshot, info), row)
            except NoFitError as exc:
                invariant = _OVER_COMMIT.get(info.request.kind, Invariant.NO_CAPACITY)
                if invariant is Invariant.VRAM_OVER_MEMORY and self._all_held_whole(
                        snapshot, row, info.node_name):
                    invariant = Invariant.WHOLE_GPU_SHARED  # a share on a GPU held whole
                violations.append(Violation(invariant, f"on {info.node_name}: {exc}"))
            violations += self._type_violations(snapshot, info, row, actual)
        spec = pod.get("spec") or {}
        return ShadowRecord(
            pod=str(info.key), scheduler=str(spec.get("schedulerName") or "default-scheduler"),
            request=info.request.describe(), node=info.node_name,
            gpus=actual.gpu_indices if actual else (), type_id=actual.type_id if actual else
            _node_type(snapshot, row), would=would, violations=tuple(violations),
            at=self._clock())

    def _alternative(self, pod: Mapping[str, Any], kube: KubeNodes) -> Alternative:
        verdict = judge_pod(self._scheduler, kube, pod)
        placement = verdict.judgement.placement
        if placement is None:
            return Alternative(node="", reason=verdict.waits())
        assignment = placement.assignment
        best = placement.scores.scores.max()
        return Alternative(node=assignment.node, gpus=assignment.gpu_indices,
                           type_id=assignment.type_id, score=round(float(best)))

    def _all_held_whole(self, snapshot: ClusterSnapshot, row: int, node: str) -> bool:
        whole = {g.index for h in self._inventory.holdings() if h.node == node and h.assignment
                 for g in h.assignment.grants if g.whole}
        present = {int(i) for i, t in zip(snapshot.gpu_index[row].tolist(),
                                          snapshot.gpu_type[row].tolist(), strict=True)
                   if int(t) >= 0}
        return bool(present) and present <= whole

    def _type_violations(self, snapshot: ClusterSnapshot, info: PodInfo, row: int,
                         actual: Assignment | None) -> list[Violation]:
        assert info.request is not None
        # typed by its node selection as the extender would type it (issue 9)
        placement = self._platform.placement_request(info.request, namespace=info.key.namespace,
                                                     nodes=snapshot.nodes)
        type_index = _granted_type_index(snapshot, row, actual) if actual else \
            _node_type_index(snapshot, row)
        if type_index < 0 or bool(placement.allowed[type_index]):
            return []
        name = snapshot.catalog.id_of(type_index)
        if not info.request.typed and bool(placement.accepted[type_index]):
            return [Violation(Invariant.PROTECTED_TYPE,
                              f"on {info.node_name}: the pod names no GPU type and {name} is "
                              "protected")]
        return [Violation(Invariant.WRONG_TYPE,
                          f"on {info.node_name}: {name} is not a type the pod accepts "
                          f"({info.request.type_source or 'excluded'})")]


def _granted_type_index(snapshot: ClusterSnapshot, row: int, actual: Assignment) -> int:
    indices = snapshot.gpu_index[row].tolist()
    first = actual.grants[0].index
    return int(snapshot.gpu_type[row, indices.index(first)]) if first in indices else -1


def _node_type_index(snapshot: ClusterSnapshot, row: int | None) -> int:
    if row is None:
        return -1
    types = [int(t) for t in snapshot.gpu_type[row].tolist() if int(t) >= 0]
    return types[0] if types else -1


def _node_type(snapshot: ClusterSnapshot, row: int | None) -> str:
    index = _node_type_index(snapshot, row)
    return snapshot.catalog.id_of(index) if index >= 0 else ""
