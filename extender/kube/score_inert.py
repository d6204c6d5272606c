"""Is each of kube-scheduler's set-dependent score plugins inert for this pod? (the exact cut)

The exact cut (``core/score_cut.py``, docs/score-cut.md) drops from filter's answer the nodes
that can never win. That is exact only when every kept node's in-tree scores are the same
with and without the dropped nodes. Facts from kube-scheduler 1.36.3's source
(``pkg/scheduler/framework/plugins/``), per score plugin of the default profile
(``apis/config/v1/default_plugins.go:38-50``, DynamicResources ``:85``):

- **TaintToleration** (weight 3): Score counts the node's PreferNoSchedule taints the pod does
  not tolerate (``tainttoleration/taint_toleration.go:195-207``, tolerations with effect ""
  or PreferNoSchedule ``:146-154``); NormalizeScore reverses over the nodes passed by their
  maximum (``:210-212``, ``helper/normalize_score.go:27-49``): set-dependent, unless no feasible
  node has an untolerated PreferNoSchedule taint (every count 0: every node 100, any subset).
- **NodeAffinity** (2): PreScore skips when the pod has no preferred terms and the profile
  adds none (``nodeaffinity/node_affinity.go:253-260``); else NormalizeScore by the maximum
  over the nodes passed (``:300-302``): set-dependent.
- **PodTopologySpread** (2): soft constraints are the pod's ``ScheduleAnyway`` ones, or, when
  the pod has no constraints at all, the system defaults (hostname, zone) with the selector of
  ``helper.DefaultSelector`` (``podtopologyspread/scoring.go:61-80``, ``common.go:62-75``):
  the Services that select the pod (nil selectors skipped, ``helper/spread.go:96-116``) and
  its controller RC / ReplicaSet / StatefulSet (``:55-90``); no constraint: Skip
  (``scoring.go:147-150``); else PreScore counts over the filtered nodes (``:86-104``) and
  NormalizeScore is a min-max over the nodes passed (``:229-268``): set-dependent.
- **InterPodAffinity** (2): the pod's preferred (anti-)affinity terms, and existing pods'
  required affinity (x hardPodAffinityWeight) and preferred terms, on nodes
  ``HavePodsWithAffinityList`` (``interpodaffinity/scoring.go:128-203``); min-max over the
  nodes passed (``:258``): set-dependent unless the pod has no preferred terms and no pod in
  the cluster has an affinity or anti-affinity section.
- **DynamicResources** (2): scores only claims with ``firstAvailable`` sub-requests
  (``dynamicresources/dynamicresources.go:1073-1146``), max-normalised (``:1152-1157``):
  a pod without ``spec.resourceClaims`` scores 0 everywhere (counted conservatively as
  set-dependent otherwise).
- **NodeResourcesFit** (1), **NodeResourcesBalancedAllocation** (1): per node, no NormalizeScore
  (``noderesources/fit.go:768``, ``balanced_allocation.go:146``): set-independent.
- **ImageLocality** (1): per node, spread by the snapshot's total node count, not the nodes
  passed (``imagelocality/image_locality.go:70-81``): set-independent.
- **VolumeBinding** (1, no weight given: ``framework/runtime/framework.go:592-595`` makes it 1):
  per node from the pod's own volume state, no NormalizeScore (``volumebinding/
  volume_binding.go:456-480``): set-independent.

So the cut's in-tree maximum for the default profile is 100 x (3+2+1+2+2+1+1+1+2) = 1,500.
This module answers, from the pod object, the cluster facts the watch keeps (``sync/
score_facts.py``) and the feasible nodes' taints, the first reason the cut must not apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from extender.kube import objects
from extender.kube.filters.facts import PREFER_NO_SCHEDULE, Taint, Toleration, tolerations_of


class CutReason(StrEnum):
    """Why filter's answer was (not) cut: the metric label ``reason``."""

    CUT = "cut"
    """Applied: nodes that can never win were left out."""
    LONE_WINNER = "lone_winner"
    """Applied: one node can win, whatever the in-tree plugins say: it is answered alone
    (kube-scheduler then skips scoring and prioritize; filter holds the GPUs)."""
    NOTHING_TO_CUT = "nothing_to_cut"
    """Eligible, but every feasible node is within reach of the best."""
    DISABLED = "cut_disabled"
    FEWER_THAN_TWO = "fewer_than_2_nodes"
    FACTS_UNKNOWN = "cluster_facts_unknown"
    """Offline, or the watches of nodes, pods and Services have not listed yet."""
    TEMPLATE_NODES = "template_nodes"
    """The ``Nodes`` form with nodes the inventory does not know."""
    PREFERRED_NODE_AFFINITY = "pod_has_preferred_node_affinity"
    PREFER_NO_SCHEDULE_TAINT = "node_has_untolerated_prefer_no_schedule_taint"
    TOPOLOGY_SPREAD = "pod_has_soft_topology_spread_constraints"
    SELECTED_BY_SERVICE = "pod_is_selected_by_a_service"
    CONTROLLER_OWNER = "pod_has_a_replicaset_statefulset_or_rc_controller"
    POD_AFFINITY_IN_CLUSTER = "some_pod_has_inter_pod_affinity_terms"
    PREFERRED_POD_AFFINITY = "pod_has_preferred_inter_pod_affinity"
    RESOURCE_CLAIMS = "pod_has_resource_claims"


SPREAD_CONTROLLERS = frozenset({("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"),
                                ("apps/v1", "StatefulSet")})
"""``helper/spread.go`` ``rcKind``, ``rsKind``, ``ssKind`` (compared by group/version/kind)."""


def _preferred(section: Mapping[str, Any]) -> bool:
    return bool(section.get("preferredDuringSchedulingIgnoredDuringExecution"))


def pod_refusal(pod: Mapping[str, Any]) -> CutReason | None:
    """The first pod-level reason the cut must not apply (``None``: none of the pod's own
    fields makes a score plugin set-dependent; Services and other pods are checked apart)."""
    return next(_pod_reasons(pod), None)


def _pod_reasons(pod: Mapping[str, Any]) -> Iterator[CutReason]:
    """Each set-dependent plugin the pod's own fields make score, as its reason, in order."""
    spec = objects.section(pod, "spec")
    affinity = objects.section(spec, "affinity")
    if _preferred(objects.section(affinity, "nodeAffinity")):
        yield CutReason.PREFERRED_NODE_AFFINITY
    if _preferred(objects.section(affinity, "podAffinity")) or \
            _preferred(objects.section(affinity, "podAntiAffinity")):
        yield CutReason.PREFERRED_POD_AFFINITY
    if spec.get("resourceClaims"):
        yield CutReason.RESOURCE_CLAIMS
    constraints = spec.get("topologySpreadConstraints")
    if constraints:
        if any(not isinstance(c, Mapping) or c.get("whenUnsatisfiable") == "ScheduleAnyway"
               for c in constraints):
            yield CutReason.TOPOLOGY_SPREAD
        # only DoNotSchedule ones: no soft constraint, no system default
    elif controller_spreads(pod):
        yield CutReason.CONTROLLER_OWNER


def uses_default_spread(pod: Mapping[str, Any]) -> bool:
    """Whether the system default constraints would apply if a Service selected the pod: the
    pod has no ``topologySpreadConstraints`` of its own (``scoring.go:63-77``)."""
    return not objects.section(pod, "spec").get("topologySpreadConstraints")


def controller_spreads(pod: Mapping[str, Any]) -> bool:
    """The pod's controller (``GetControllerOfNoCopy``) is an RC, ReplicaSet or StatefulSet."""
    refs = objects.meta(pod).get("ownerReferences") or ()
    return any(isinstance(r, Mapping) and r.get("controller") is True and
               (r.get("apiVersion"), r.get("kind")) in SPREAD_CONTROLLERS for r in refs)


def has_pod_affinity(pod: Mapping[str, Any]) -> bool:
    """Any inter-pod affinity or anti-affinity section (kube's ``PodsWithAffinity``)."""
    affinity = objects.section(objects.section(pod, "spec"), "affinity")
    return bool(affinity.get("podAffinity")) or bool(affinity.get("podAntiAffinity"))


def prefer_no_schedule_taints(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The node's ``spec.taints`` with effect PreferNoSchedule."""
    taints = objects.section(node, "spec").get("taints") or ()
    return tuple(Taint(str(t.get("key") or ""), str(t.get("value") or ""), PREFER_NO_SCHEDULE)
                 for t in taints
                 if isinstance(t, Mapping) and t.get("effect") == PREFER_NO_SCHEDULE)


def pod_tolerations(pod: Mapping[str, Any]) -> tuple[Toleration, ...]:
    return tolerations_of(objects.section(pod, "spec"))


def untolerated(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]) -> bool:
    """Some taint no toleration tolerates (an unknown operator tolerates nothing)."""
    return any(not any(t.tolerates(taint) for t in tolerations) for taint in taints)


def service_selector(service: Mapping[str, Any]) -> dict[str, str] | None:
    """A Service's ``spec.selector``; ``None`` for a nil or empty one: a nil selector matches
    nothing (``spread.go:105-108``) and an empty one adds no label to the default selector, which
    then stays empty (``common.go:67-70``)."""
    selector = objects.section(service, "spec").get("selector")
    if not isinstance(selector, Mapping) or not selector:
        return None
    return {str(k): str(v) for k, v in selector.items()}


def selects(selector: Mapping[str, str], pod_labels: Mapping[str, Any]) -> bool:
    return all(pod_labels.get(k) == v for k, v in selector.items())


def set_dependent_reasons(pod: Mapping[str, Any], *, tainted: Iterable[tuple[Taint, ...]],
                          service_selectors: Iterable[Mapping[str, str]],
                          pods_with_affinity: int) -> list[CutReason]:
    """Every reason a set-dependent plugin scores ``pod``, in the order ``refusal`` reports
    them: its own fields, then the cluster (``pods_with_affinity``: pods with an inter-pod
    affinity section, pending or bound; ``service_selectors``: the non-empty selectors of the
    Services in the pod's namespace), then ``tainted`` (the PreferNoSchedule taints of the
    feasible nodes that have any)."""
    reasons = list(_pod_reasons(pod))
    if pods_with_affinity > 0:
        reasons.append(CutReason.POD_AFFINITY_IN_CLUSTER)
    if uses_default_spread(pod):
        labels = objects.labels(pod)
        if any(selects(selector, labels) for selector in service_selectors):
            reasons.append(CutReason.SELECTED_BY_SERVICE)
    tolerations = pod_tolerations(pod)
    if any(untolerated(taints, tolerations) for taints in tainted):
        reasons.append(CutReason.PREFER_NO_SCHEDULE_TAINT)
    return reasons


def refusal(pod: Mapping[str, Any], *, tainted: Iterable[tuple[Taint, ...]],
            service_selectors: Iterable[Mapping[str, str]], pods_with_affinity: int
            ) -> CutReason | None:
    """The first reason the cut must not apply for ``pod`` (``set_dependent_reasons``)."""
    reasons = set_dependent_reasons(pod, tainted=tainted, service_selectors=service_selectors,
                                    pods_with_affinity=pods_with_affinity)
    return reasons[0] if reasons else None


PLUGIN_OF: dict[CutReason, str] = {
    CutReason.PREFERRED_NODE_AFFINITY: "NodeAffinity",
    CutReason.PREFERRED_POD_AFFINITY: "InterPodAffinity",
    CutReason.POD_AFFINITY_IN_CLUSTER: "InterPodAffinity",
    CutReason.RESOURCE_CLAIMS: "DynamicResources",
    CutReason.TOPOLOGY_SPREAD: "PodTopologySpread",
    CutReason.CONTROLLER_OWNER: "PodTopologySpread",
    CutReason.SELECTED_BY_SERVICE: "PodTopologySpread",
    CutReason.PREFER_NO_SCHEDULE_TAINT: "TaintToleration",
}
"""The set-dependent plugin (of ``config.score_cut.types.SET_DEPENDENT_PLUGINS``) each reason
makes score."""


def scoring_plugins(reasons: Iterable[CutReason]) -> frozenset[str]:
    """The set-dependent plugins that score a pod with these ``set_dependent_reasons``; each
    one left out gives every feasible node the same score."""
    return frozenset(PLUGIN_OF[reason] for reason in reasons)
