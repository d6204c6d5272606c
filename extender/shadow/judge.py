"""Judge one bind made by another scheduler, on the inventory as it was just before it.

Two questions, both answered by the same core the extender serves with:

- what would gpu-extender have done? ``SchedulingVerbs.explain`` over the nodes the pod's
  ``nodeSelector`` allows (affinity, taints and the in-tree plugins are kube-scheduler's; the
  shadow does not repeat them), the best-scored node, and the GPUs ``assign`` gives there;
- did the real placement break a per-GPU invariant? The pod's GPUs on its real node are
  inferred exactly as the inventory infers them for pods it did not bind (any type allowed);
  when nothing on that node can hold the pod, the real placement over-commits a GPU.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from extender.core.assign import NoFitError, assign
from extender.core.request import PlacementRequest
from extender.inventory.snapshot import ClusterSnapshot
from extender.inventory.store import Inventory
from extender.model import Assignment, PodInfo, RequestKind
from extender.platform import Platform
from extender.server.verbs import SchedulingVerbs
from extender.shadow.record import Alternative, Invariant, ShadowRecord, Violation

InferOn = Callable[[ClusterSnapshot, PodInfo], PlacementRequest]
"""The request as the inventory infers a pod bound elsewhere: any type may be what it took."""

_OVER_COMMIT = {RequestKind.WHOLE: Invariant.WHOLE_GPU_SHARED,
                RequestKind.VRAM: Invariant.VRAM_OVER_MEMORY,
                RequestKind.FRACTION: Invariant.VRAM_OVER_MEMORY}


class ShadowJudge:
    def __init__(self, platform: Platform, inventory: Inventory, verbs: SchedulingVerbs, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._platform = platform
        self._inventory = inventory
        self._verbs = verbs
        self._clock = clock

    def judge(self, pod: Mapping[str, Any], info: PodInfo, candidates: list[str],
              infer: InferOn) -> ShadowRecord:
        """``info`` is the bound pod (``request`` set); ``candidates`` the nodes its
        nodeSelector allows."""
        assert info.request is not None
        snapshot = self._inventory.snapshot()
        unbound = _without_node(pod)
        would = self._alternative(snapshot, unbound, candidates)
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

    def _alternative(self, snapshot: ClusterSnapshot, pod: Mapping[str, Any],
                     candidates: list[str]) -> Alternative:
        report = self._verbs.explain(pod, candidates)
        nodes = report.get("nodes") or []
        best = next((n for n in nodes if n["verdict"] == "fits"), None)
        if best is None:
            reasons = Counter(str(n["reason"]) for n in nodes if n.get("reason"))
            reason = reasons.most_common(1)[0][0] if reasons else \
                (report.get("error") or "no node matches the pod's nodeSelector")
            return Alternative(node="", reason=str(reason))
        decoded = self._verbs.scheduler.cycles.detached(pod).pod  # leaves no trace
        row = snapshot.node_index.get(best["node"])
        gpus: tuple[int, ...] = ()
        type_id = ""
        if decoded.placement is not None and row is not None:
            try:
                chosen = assign(snapshot, decoded.placement, row)
                gpus, type_id = chosen.gpu_indices, chosen.type_id
            except NoFitError:
                pass  # the inventory moved since explain's snapshot: the node stays the answer
        return Alternative(node=best["node"], gpus=gpus, type_id=type_id, score=best["score"])

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


def _without_node(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as it was before the bind (explain judges a pod to be placed)."""
    spec = dict(pod.get("spec") or {})
    spec.pop("nodeName", None)
    return {**pod, "spec": spec}


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
