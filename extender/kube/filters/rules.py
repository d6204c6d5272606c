"""The filter plugins of kube-scheduler's default profile that decide on Node and Pod fields,
in the profile's order (``pkg/scheduler/apis/config/v1/default_plugins.go``). Like
``framework.RunFilterPlugins``, the first plugin that rejects a node gives its reason.

Each rule cites the kube-scheduler source (``pkg/scheduler/framework/plugins/...``, 1.36) it
follows; the table tests in ``tests/kube/filters/`` do the same. Volume, DRA and inter-pod
affinity plugins are not modelled (see docs/what-if.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from extender.kube.filters.facts import (
    CPU,
    EPHEMERAL,
    MEMORY,
    NO_EXECUTE,
    NO_SCHEDULE,
    PODS,
    TAINT_NOT_READY,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
    HostPort,
    NodeFacts,
    PodDemand,
    Taint,
)
from extender.kube.selection import matches

UNCHECKED_IF_ABSENT = frozenset({CPU, MEMORY, EPHEMERAL, PODS})


class Rule(Enum):
    """Why kube-scheduler leaves a node out; the value is the JSON name."""

    UNSCHEDULABLE = "unschedulable"
    NODE_NAME = "node name"
    NOT_READY = "not ready"
    TAINT = "taint"
    NODE_AFFINITY = "node affinity/selector"
    HOST_PORTS = "host ports"
    RESOURCES = "resources"


@dataclass(frozen=True)
class Exclusion:
    rule: Rule
    subject: str = ""
    """What the rule tripped on: the taint, the ports, the resources ("cpu, memory")."""
    detail: str = ""
    """Numbers for this node ("needs 500 cores, 64 free"); not part of the group key."""

    def message(self) -> str:
        text = {
            Rule.UNSCHEDULABLE: "unschedulable (cordoned)",
            Rule.NODE_NAME: "not the pod's spec.nodeName",
            Rule.NOT_READY: f"not ready (taint {self.subject})",
            Rule.TAINT: f"taint {self.subject}",
            Rule.NODE_AFFINITY: "node affinity/selector" + (f" ({self.subject})"
                                                             if self.subject else ""),
            Rule.HOST_PORTS: f"host port {self.subject} in use",
            Rule.RESOURCES: f"insufficient {self.subject}",
        }[self.rule]
        return text


@dataclass(frozen=True)
class NodeUse:
    """What the pods on one node take (``framework.NodeInfo``: ``Requested``, ``Pods``,
    ``UsedPorts``)."""

    requested: Mapping[str, int]
    pods: int
    ports: tuple[HostPort, ...]


def node_unschedulable(pod: PodDemand, node: NodeFacts) -> Exclusion | None:
    """``nodeunschedulable/node_unschedulable.go``: a cordoned node, unless the pod tolerates
    the ``node.kubernetes.io/unschedulable:NoSchedule`` taint."""
    if not node.unschedulable:
        return None
    taint = Taint(TAINT_UNSCHEDULABLE, "", NO_SCHEDULE)
    if any(t.tolerates(taint) for t in pod.tolerations):
        return None
    return Exclusion(Rule.UNSCHEDULABLE)


def node_name(pod: PodDemand, node: NodeFacts) -> Exclusion | None:
    """``nodename/node_name.go``: ``spec.nodeName`` empty or this node."""
    if not pod.node_name or pod.node_name == node.name:
        return None
    return Exclusion(Rule.NODE_NAME, pod.node_name)


def taint_toleration(pod: PodDemand, node: NodeFacts) -> Exclusion | None:
    """``tainttoleration/taint_toleration.go``: the first NoSchedule or NoExecute taint no
    toleration tolerates (``v1helper.FindMatchingUntoleratedTaint``); PreferNoSchedule only
    scores. A condition taint (not-ready, unreachable) is reported as not ready."""
    for taint in node.taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE):
            continue
        if any(t.tolerates(taint) for t in pod.tolerations):
            continue
        rule = Rule.NOT_READY if taint.key in (TAINT_NOT_READY, TAINT_UNREACHABLE) else \
            Rule.TAINT
        return Exclusion(rule, taint.describe())
    return None


def node_affinity(pod: PodDemand, node: NodeFacts) -> Exclusion | None:
    """``nodeaffinity/node_affinity.go``: every ``nodeSelector`` pair, and one required
    ``nodeSelectorTerms`` entry (all operators, ``matchFields`` on ``metadata.name``;
    ``kube/selection.py``)."""
    if matches(pod.selection, node.name, node.labels):
        return None
    return Exclusion(Rule.NODE_AFFINITY, pod.selection.describe())


def node_ports(pod: PodDemand, use: NodeUse) -> Exclusion | None:
    """``nodeports/node_ports.go``: no wanted host port already used on the node."""
    clash = [p for p in pod.host_ports if any(p.conflicts(u) for u in use.ports)]
    if not clash:
        return None
    return Exclusion(Rule.HOST_PORTS, ", ".join(p.describe() for p in clash))


def resources_fit(pod: PodDemand, node: NodeFacts, use: NodeUse,
                  ignored: frozenset[str]) -> Exclusion | None:
    """``noderesources/fit.go`` ``fitsRequest``: one more pod within ``pods``; each requested
    resource within allocatable minus what the node's pods request. Extended resources the
    scheduler is told to ignore (``ignoredByScheduler`` of an extender's managed resources,
    and ``ignoredResources``) are skipped; an extended resource the node lacks has 0. A
    node whose ``status.allocatable`` has no cpu, memory, ephemeral-storage or pods at all (a
    hand-written dump: the API server always reports them) is not checked for it."""
    short: list[str] = []
    details: list[str] = []
    allocatable = node.allocatable
    allowed_pods = allocatable.get(PODS)
    if allowed_pods is not None and use.pods + 1 > allowed_pods:
        short.append(PODS)
        details.append(f"pods: {use.pods} of {allowed_pods}")
    for name, want in pod.requests.items():
        if name == PODS or want <= 0 or name in ignored or (
                name in UNCHECKED_IF_ABSENT and name not in allocatable):
            continue
        free = node.allocatable.get(name, 0) - use.requested.get(name, 0)
        if want > free:
            short.append(name)
            details.append(f"{name}: needs {_amount(name, want)}, "
                           f"{_amount(name, max(free, 0))} free")
    if not short:
        return None
    return Exclusion(Rule.RESOURCES, ", ".join(short), "; ".join(details))


def _amount(name: str, value: int) -> str:
    if name == CPU:
        return f"{value / 1000:g} cores" if value % 1000 == 0 else f"{value}m"
    if name in (MEMORY, EPHEMERAL):
        return f"{value / 2**30:.1f}Gi" if value >= 2**30 else f"{value / 2**20:.0f}Mi"
    return str(value)


def first_exclusion(pod: PodDemand, node: NodeFacts, use: NodeUse,
                    ignored: frozenset[str]) -> Exclusion | None:
    """The default profile's filters in order; ``None``: the node passes them all."""
    return (node_unschedulable(pod, node) or node_name(pod, node)
            or taint_toleration(pod, node) or node_affinity(pod, node)
            or node_ports(pod, use) or resources_fit(pod, node, use, ignored))
