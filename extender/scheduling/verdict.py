"""The whole verdict on one pod, as kube-scheduler with the extender would reach it: the
in-tree filters first (``kube.filters``: only the nodes they pass reach the extender), then the
extender's judgement on those (``Scheduler.judge``). One function for the what-if, ``explain``
and the shadow, so the three say the same thing.

Reasons come back grouped, kube-scheduler's and the extender's side by side, most nodes first:
"3 nodes: node affinity/selector; 2 nodes: insufficient cpu (...); 1 node: not enough free
GPUs".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.core.reasons import Reason, format_reason_for
from extender.kube.filters.nodes import KubeNodes, KubeVerdict
from extender.kube.filters.reasons import ReasonGroup, group_exclusions, sort_groups
from extender.model import RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI
from extender.scheduling.explain import PlacementBreakdown, breakdown
from extender.scheduling.scheduler import Judgement, Scheduler

EXTENDER_RULE = "extender"


SCHEDULER_IGNORED = frozenset({RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI, "nvidia.com/gpumem",
                               "nvidia.com/gpumem-percentage"})
"""The extended resources the shipped scheduler configs and the chart mark
``ignoredByScheduler: true`` (per-GPU shares kube-scheduler cannot count: the extender does).
The VRAM resources of other tools (``aliyun.com/gpu-mem``...) stay checked in-tree against
the node's total."""


def ignored_resources() -> frozenset[str]:
    """What ``NodeResourcesFit`` skips under the shipped configs (``SCHEDULER_IGNORED``)."""
    return SCHEDULER_IGNORED


@dataclass(frozen=True, eq=False)
class PodVerdict:
    kube: KubeVerdict
    judgement: Judgement
    reasons: list[ReasonGroup] = field(default_factory=list)
    """Why the nodes left out were left out, kube-scheduler's filters and the extender's."""

    @property
    def node(self) -> str:
        return self.judgement.node

    def waits(self) -> str:
        """Why no node takes the pod, in one line ('' when one does)."""
        if self.node:
            return ""
        pod = self.judgement.explanation.cycle.pod
        if pod.error:
            return pod.error
        if not self.reasons:
            return "no node in the cluster"
        return "; ".join(g.describe() for g in self.reasons)


def judge_pod(scheduler: Scheduler, kube: KubeNodes, pod: Mapping[str, Any]) -> PodVerdict:
    """``pod`` judged as a pod to place (``spec.nodeName`` ignored), on the nodes kube
    knows."""
    unbound = without_node(pod)
    verdict = kube.filter(unbound)
    judgement = scheduler.judge(unbound, verdict.feasible)
    reasons = group_exclusions(verdict.excluded) + extender_reasons(judgement)
    return PodVerdict(verdict, judgement, sort_groups(reasons))


def extender_reasons(judgement: Judgement) -> list[ReasonGroup]:
    """The extender's filter reasons of the nodes it was given and refused, grouped."""
    explanation = judgement.explanation
    evaluation, request = explanation.evaluation, explanation.cycle.pod.request
    if evaluation is None or request is None:
        return []
    catalog = explanation.snapshot.catalog
    by_text: dict[str, list[str]] = {}
    for name, code, params in zip(evaluation.names, evaluation.code.tolist(),
                                  evaluation.params.tolist(), strict=True):
        if code == Reason.FITS:
            continue
        text = format_reason_for(catalog, request, code, *params)
        by_text.setdefault(text, []).append(name)
    return [ReasonGroup(text, tuple(names), EXTENDER_RULE) for text, names in by_text.items()]


def choice_breakdown(scheduler: Scheduler, judgement: Judgement) -> PlacementBreakdown | None:
    """The judged choice against the runner-up, term by term (two rows, as the bind's
    announcement computes it); ``None`` when nothing was placed."""
    placement, explanation = judgement.placement, judgement.explanation
    request, evaluation = explanation.cycle.pod.placement, explanation.evaluation
    if placement is None or request is None or evaluation is None:
        return None
    return breakdown(type(scheduler.scorer.strategy).NAME, scheduler.scorer.explain,
                     placement.assignment.node, snapshot=explanation.snapshot,
                     request=request, fitted=evaluation.fit, result=placement.scores)


def without_node(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as it was before a bind: judged as one to place."""
    spec = dict(pod.get("spec") or {})
    spec.pop("nodeName", None)
    return {**pod, "spec": spec}
