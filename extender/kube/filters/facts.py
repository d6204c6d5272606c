"""A Node and a Pod as kube-scheduler's filters read them.

Requests follow ``k8s.io/component-helpers/resource/helpers.go`` ``PodRequests`` (what
``NodeResourcesFit`` and ``NodeInfo.Requested`` use): the sum of the containers; init containers
run one at a time, so the larger of that sum and each init container (plus the restartable
"sidecar" init containers started before it; sidecars also add to the sum); pod-level
``spec.resources.requests`` replace the containers' cpu and memory (``PodLevelResources``); then
``spec.overhead`` is added. A container with a limit and no request requests its limit, as the
API server's defaulting writes it (``pkg/apis/core/v1/defaults.go``), so a manifest that never
went through the API server is read as the stored pod would be.

Units: cpu in millicores, everything else in the quantity's integer value (bytes for memory and
ephemeral-storage), rounded up as ``Quantity.MilliValue`` / ``Value`` do. Values the API server
would have refused read as 0 (``lenient_quantity``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.kube import objects
from extender.kube.selection import NodeSelection, selection_of
from extender.quantity import lenient_quantity, parse_quantity, quantity_to_int, quantity_to_milli

CPU, MEMORY, EPHEMERAL, PODS = "cpu", "memory", "ephemeral-storage", "pods"
POD_LEVEL = (CPU, MEMORY)
"""Resources pod-level ``spec.resources`` may set (hugepages too, read the same way)."""

TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE = "NoSchedule", "NoExecute", "PreferNoSchedule"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE

    def describe(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else \
            f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """``k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint``: an empty effect matches
        every effect, an empty key with ``Exists`` every key; ``Exists`` ignores the value,
        ``Equal`` (the default) compares it."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return False


@dataclass(frozen=True)
class HostPort:
    ip: str
    protocol: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        """``framework.HostPortInfo.CheckConflict``: same protocol and port, and the same IP
        or either one the wildcard 0.0.0.0."""
        return self.port == other.port and self.protocol == other.protocol and (
            self.ip == other.ip or "0.0.0.0" in (self.ip, other.ip))

    def describe(self) -> str:
        return f"{self.port}/{self.protocol}" + (f" on {self.ip}" if self.ip != "0.0.0.0"
                                                 else "")


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    taints: tuple[Taint, ...] = ()
    """``spec.taints``, plus the condition taint the node lifecycle controller adds when the
    Ready condition is False (not-ready) or Unknown (unreachable) and the node lacks it."""
    unschedulable: bool = False
    ready: bool = True
    """The Ready condition is True, or the node reports none (a hand-written dump)."""
    allocatable: Mapping[str, int] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class PodDemand:
    key: str
    """``namespace/name``."""
    uid: str
    node_name: str
    requests: Mapping[str, int] = field(default_factory=dict, hash=False)
    host_ports: tuple[HostPort, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    selection: NodeSelection = field(default_factory=NodeSelection)
    terminal: bool = False
    """Succeeded or Failed: kube-scheduler's cache no longer counts it on its node."""


def resource_value(name: str, value: object) -> int:
    """One quantity in the filters' units (cpu: millicores; others: the integer value)."""
    if name == CPU:
        return lenient_quantity(quantity_to_milli, value)
    return lenient_quantity(lambda v: quantity_to_int(parse_quantity(v)), value)


def resource_list(section: object) -> dict[str, int]:
    if not isinstance(section, Mapping):
        return {}
    return {str(k): resource_value(str(k), v) for k, v in section.items()}


def node_facts(node: Mapping[str, Any]) -> NodeFacts:
    spec, status = objects.section(node, "spec"), objects.section(node, "status")
    taints = [Taint(str(t.get("key") or ""), str(t.get("value") or ""),
                    str(t.get("effect") or ""))
              for t in spec.get("taints") or () if isinstance(t, Mapping)]
    ready_status = next((str(c.get("status")) for c in status.get("conditions") or ()
                         if isinstance(c, Mapping) and c.get("type") == "Ready"), "True")
    condition_taint = {"False": TAINT_NOT_READY, "Unknown": TAINT_UNREACHABLE}.get(ready_status)
    if condition_taint is not None and not any(
            t.key == condition_taint and t.effect == NO_SCHEDULE for t in taints):
        # pkg/controller/nodelifecycle: taintNodeByCondition adds it within seconds
        taints.append(Taint(condition_taint, "", NO_SCHEDULE))
    labels = {str(k): str(v) for k, v in objects.labels(node).items()}
    return NodeFacts(objects.name(node), labels, tuple(taints),
                     spec.get("unschedulable") is True, ready_status == "True",
                     resource_list(status.get("allocatable")))


def container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    """Requests, with a request defaulted to the limit where only the limit is set."""
    resources = objects.section(container, "resources")
    merged = {**resource_list(resources.get("limits")), **resource_list(resources.get("requests"))}
    return {k: v for k, v in merged.items() if v}


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > total.get(name, 0):
            total[name] = value


def _containers(spec: Mapping[str, Any], key: str) -> Iterable[Mapping[str, Any]]:
    return (c for c in spec.get(key) or () if isinstance(c, Mapping))


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """``PodRequests`` (see the module docstring), without zero entries."""
    spec = objects.section(pod, "spec")
    requests: dict[str, int] = {}
    for container in _containers(spec, "containers"):
        _add(requests, container_requests(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in _containers(spec, "initContainers"):
        own = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(requests, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            running = dict(own)
            _add(running, sidecars)
            _max(init_peak, running)
    _max(requests, init_peak)
    pod_level = resource_list(objects.section(spec, "resources").get("requests"))
    for name, value in pod_level.items():
        if name in POD_LEVEL or name.startswith("hugepages-"):
            requests[name] = value
    _add(requests, resource_list(spec.get("overhead")))
    return {k: v for k, v in requests.items() if v}


def host_ports(pod: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """The ports the pod binds on its node: ``hostPort`` of every container and of the
    restartable init containers (``nodeports.getContainerPorts``)."""
    spec = objects.section(pod, "spec")
    containers = list(_containers(spec, "containers")) + [
        c for c in _containers(spec, "initContainers") if c.get("restartPolicy") == "Always"]
    ports: list[HostPort] = []
    for container in containers:
        for port in container.get("ports") or ():
            if not isinstance(port, Mapping):
                continue
            number = port.get("hostPort")
            if isinstance(number, int) and not isinstance(number, bool) and number > 0:
                ports.append(HostPort(str(port.get("hostIP") or "0.0.0.0"),
                                      str(port.get("protocol") or "TCP"), number))
    return tuple(ports)


def tolerations_of(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    """A pod spec's ``tolerations``."""
    return tuple(
        Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"),
                   str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in spec.get("tolerations") or () if isinstance(t, Mapping))


def pod_demand(pod: Mapping[str, Any]) -> PodDemand:
    spec, status = objects.section(pod, "spec"), objects.section(pod, "status")
    tolerations = tolerations_of(spec)
    return PodDemand(f"{objects.namespace(pod)}/{objects.name(pod)}", objects.uid(pod),
                     objects.node_name(pod), pod_requests(pod), host_ports(pod), tolerations,
                     selection_of(spec), status.get("phase") in ("Succeeded", "Failed"))
