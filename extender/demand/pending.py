"""Which pods need demand: pods of the extender's scheduler, not bound, ``PodScheduled=False``
(reason ``Unschedulable``) since at least the debounce, asking for GPUs, and that **fit nowhere
now**, asked of the same core the extender serves with (``scheduling.verdict.judge_pod``:
kube-scheduler's filters, then ``Scheduler.judge``) on the controller's own inventory. A pod
that fits now gets no demand (kube-scheduler will place it on its next try).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from extender.demand.clock import epoch
from extender.demand.labels import is_demand
from extender.kube import objects
from extender.kube.filters.nodes import KubeNodes
from extender.model import PodInfo
from extender.platform import Platform
from extender.scheduling.scheduler import Scheduler
from extender.scheduling.verdict import judge_pod


class Waiting(StrEnum):
    """Why a pod does (``DEMAND``) or does not get demand: a closed set."""

    DEMAND = "demand"
    NOT_OURS = "not-ours"
    """Another scheduler's pod, a demand object, bound, terminating or finished."""
    NOT_UNSCHEDULABLE = "not-unschedulable"
    """No ``PodScheduled=False`` with reason ``Unschedulable`` (not tried yet, or gated)."""
    NOMINATED = "nominated"
    """kube-scheduler preempts for it (``status.nominatedNodeName``): a node is being freed."""
    DEBOUNCING = "debouncing"
    NO_GPU = "no-gpu"
    INVALID = "invalid"
    """Its GPU request is one the extender refuses: no node can help."""
    FITS_NOW = "fits-now"


@dataclass(frozen=True)
class PodWait:
    pod: Mapping[str, Any]
    info: PodInfo | None
    waiting: Waiting
    why: str = ""
    """Why it fits nowhere (``DEMAND``), from the verdict."""


def unschedulable_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod's ``PodScheduled`` became ``False``/``Unschedulable`` (epoch seconds);
    ``None`` when it is not so."""
    for condition in objects.section(pod, "status").get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            if condition.get("status") == "False" and \
                    condition.get("reason") == "Unschedulable":
                return epoch(condition.get("lastTransitionTime"))
            return None
    return None


def screen(pod: Mapping[str, Any], schedulers: Collection[str], *, now: float,
           debounce_s: float) -> Waiting | None:
    """The cheap checks, before any decode: ``None`` when the pod goes on to be judged."""
    spec = objects.section(pod, "spec")
    status = objects.section(pod, "status")
    if str(spec.get("schedulerName") or "default-scheduler") not in schedulers or \
            is_demand(pod) or spec.get("nodeName") or objects.meta(pod).get(
                "deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
        return Waiting.NOT_OURS
    if status.get("nominatedNodeName"):
        return Waiting.NOMINATED
    since = unschedulable_since(pod)
    if since is None:
        return Waiting.NOT_UNSCHEDULABLE
    if now - since < debounce_s:
        return Waiting.DEBOUNCING
    return None


class PendingJudge:
    """Judges unbound pods on one inventory (``scheduler``'s) and one ``kube`` view."""

    def __init__(self, platform: Platform, scheduler: Scheduler, kube: KubeNodes,
                 schedulers: Collection[str], *, debounce_s: float,
                 clock: Callable[[], float]) -> None:
        self._platform = platform
        self._scheduler = scheduler
        self._kube = kube
        self._schedulers = frozenset(schedulers)
        self._debounce = debounce_s
        self._clock = clock

    def judge(self, pod: Mapping[str, Any]) -> PodWait:
        screened = screen(pod, self._schedulers, now=self._clock(), debounce_s=self._debounce)
        if screened is not None:
            return PodWait(pod, None, screened)
        info = self._platform.pods.decode(pod)
        if info.request is None:
            return PodWait(pod, info, Waiting.INVALID if info.problems else Waiting.NO_GPU,
                           "; ".join(info.problems))
        verdict = judge_pod(self._scheduler, self._kube, pod)
        if verdict.node:
            return PodWait(pod, info, Waiting.FITS_NOW)
        error = verdict.judgement.explanation.cycle.pod.error
        if error:
            return PodWait(pod, info, Waiting.INVALID, error)
        return PodWait(pod, info, Waiting.DEMAND, verdict.waits())

    def waiting(self, pods: Iterable[Mapping[str, Any]]) -> list[PodWait]:
        """Every pod judged, sorted by ``namespace/name``."""
        judged = [self.judge(p) for p in pods]
        return sorted(judged, key=lambda w: str(objects.pod_key(w.pod)))
