"""A small reference of kube-scheduler 1.36.3's node choice, written from its Go source, for the
exact cut's differential test (``tests/core/test_score_cut_decision.py``).

Per plugin, the raw per-node score and the normalisation over the nodes passed
(``pkg/scheduler/framework/plugins``):

- TaintToleration (weight 3): untolerated PreferNoSchedule taints, reversed by the maximum
  (``helper.DefaultNormalizeScore(100, true)``);
- NodeAffinity (2): the weights of the preferred terms the node matches (``In`` only),
  by the maximum; skipped without preferred terms;
- PodTopologySpread (2): the node's count of matching pods per soft constraint plus
  ``maxSkew - 1`` (the raw sum simplified: the normalisation is what the cut depends on),
  ``100 x (max + min - s) / max``; soft constraints: the pod's ``ScheduleAnyway`` ones, or the
  system defaults when it has none and a Service or an RC/RS/StatefulSet controller selects it;
- InterPodAffinity (2): a per-node topology score (``ipa`` in the node, from existing pods'
  terms; positive or negative), min-max to ``int(100 x (s - min) / (max - min))``; active when
  the pod has preferred terms or some pod has an affinity section;
- DynamicResources (2): the node's ``dra`` score by the maximum, for a pod with claims;
- NodeResourcesFit, BalancedAllocation, ImageLocality, VolumeBinding (1 each): the node's own
  ``local`` (0..400 together), independent of the set;
- each extender priority: ``p x weight x 10``.

``winners`` is the set of nodes with the highest total (``selectHost`` picks one at random).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2,
           "InterPodAffinity": 2, "DynamicResources": 2}
LOCAL_MAX = 400
IN_TREE_MAX = 100 * sum(WEIGHTS.values()) + LOCAL_MAX  # 1,500: the default profile's


@dataclass(frozen=True)
class RefNode:
    name: str
    priority: int
    """The extender's (0..10)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    local: int = 0
    spread: int = 0
    """Matching pods in the node's domain (PodTopologySpread's raw count)."""
    ipa: int = 0
    dra: int = 0


@dataclass(frozen=True)
class RefCluster:
    services: tuple[Mapping[str, str], ...] = ()
    """Selectors of the Services in the pod's namespace."""
    pods_with_affinity: int = 0


def _tolerated(taint: Mapping[str, str], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, "", "PreferNoSchedule"):
            continue
        if t.get("key") and t.get("key") != taint["key"]:
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _by_max(raw: list[int], reverse: bool) -> list[int]:
    top = max(raw)
    if top == 0:
        return [100 if reverse else 0 for _ in raw]
    return [100 - 100 * s // top if reverse else 100 * s // top for s in raw]


def _soft_constraints(pod: Mapping[str, Any], cluster: RefCluster) -> list[Mapping[str, Any]]:
    spec = pod.get("spec", {})
    own = spec.get("topologySpreadConstraints") or []
    if own:
        return [c for c in own if c.get("whenUnsatisfiable") == "ScheduleAnyway"]
    labels = pod.get("metadata", {}).get("labels", {})
    selected = any(s and all(labels.get(k) == v for k, v in s.items())
                   for s in cluster.services)
    owners = pod.get("metadata", {}).get("ownerReferences") or []
    controlled = any(o.get("controller") and o.get("kind") in
                     ("ReplicaSet", "StatefulSet", "ReplicationController") for o in owners)
    if selected or controlled:
        return [{"maxSkew": 3}, {"maxSkew": 5}]
    return []


def in_tree(pod: Mapping[str, Any], nodes: Sequence[RefNode], cluster: RefCluster
            ) -> dict[str, int]:
    """Each node's weighted in-tree total when ``nodes`` are the nodes passed."""
    spec = pod.get("spec", {})
    affinity = spec.get("affinity") or {}
    totals = {n.name: n.local for n in nodes}

    def add(plugin: str, scores: list[int]) -> None:
        for n, s in zip(nodes, scores, strict=True):
            totals[n.name] += WEIGHTS[plugin] * s

    tolerations = spec.get("tolerations") or []
    add("TaintToleration", _by_max(
        [sum(1 for t in n.taints if t["effect"] == "PreferNoSchedule"
             and not _tolerated(t, tolerations)) for n in nodes], reverse=True))
    terms = (affinity.get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution") or []
    if terms:
        add("NodeAffinity", _by_max([sum(
            t["weight"] for t in terms
            if all(n.labels.get(e["key"]) in e["values"]
                   for e in t["preference"]["matchExpressions"])) for n in nodes],
            reverse=False))
    soft = _soft_constraints(pod, cluster)
    if soft:
        raw = [sum(n.spread + c["maxSkew"] - 1 for c in soft) for n in nodes]
        top, low = max(raw), min(raw)
        add("PodTopologySpread", [100 if top == 0 else 100 * (top + low - s) // top
                                  for s in raw])
    preferred_pod = any((affinity.get(k) or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution")
        for k in ("podAffinity", "podAntiAffinity"))
    if preferred_pod or cluster.pods_with_affinity:
        raw = [n.ipa for n in nodes]
        top, low = max(raw), min(raw)
        add("InterPodAffinity", [int(100 * (s - low) / (top - low)) if top > low else 0
                                 for s in raw])
    if spec.get("resourceClaims"):
        add("DynamicResources", _by_max([n.dra for n in nodes], reverse=False))
    return totals


def winners(pod: Mapping[str, Any], nodes: Sequence[RefNode], cluster: RefCluster, *,
            weight: int) -> set[str]:
    totals = in_tree(pod, nodes, cluster)
    for n in nodes:
        totals[n.name] += n.priority * weight * 10
    best = max(totals.values())
    return {name for name, total in totals.items() if total == best}
