"""The agent's Prometheus metrics, in a registry it owns. Units are in the names; labels use
dcgm-exporter's names where they exist (``UUID``, ``modelName``, ``GPU_I_PROFILE``, ``gpu``,
``namespace``, ``pod``, ``container``, ``Hostname``), so dashboards can join the two.

Per-pass gauges are rendered from the last pass (a collector), so a pod that went away leaves
no stale series behind."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from extender.agent.devices import Device
from extender.agent.usage import Usage

PREFIX = "gpu_extender_agent"
_MIB = 1 << 20


@dataclass(frozen=True)
class PassView:
    """What one pass saw, for the gauges."""

    usage: Sequence[Usage] = ()
    declared: Sequence[tuple[str, str, Device, int]] = ()
    """(namespace, pod, device, declared MiB)."""
    health: Sequence[tuple[Device, bool]] = ()
    open_episodes: int = 0


@dataclass
class _Latest:
    view: PassView = field(default_factory=PassView)
    lock: Lock = field(default_factory=Lock)


class _PassCollector:
    def __init__(self, latest: _Latest, node: str) -> None:
        self._latest = latest
        self._node = node

    def collect(self) -> Iterator[Metric]:
        with self._latest.lock:
            view = self._latest.view
        device_labels = ["gpu", "UUID", "modelName", "GPU_I_PROFILE", "Hostname"]

        def dev(device: Device) -> list[str]:
            return [str(device.gpu_index), device.uuid, device.model,
                    device.mig_profile or "", self._node]

        used = GaugeMetricFamily(f"{PREFIX}_gpu_memory_used_bytes",
                                 "VRAM a pod's container really uses on a GPU or MIG instance",
                                 labels=[*device_labels, "namespace", "pod", "container"])
        for u in view.usage:
            used.add_metric([*dev(u.device), u.namespace, u.pod, u.container],
                            u.used_mib * _MIB)
        declared = GaugeMetricFamily(f"{PREFIX}_gpu_memory_declared_bytes",
                                     "VRAM a pod's assignment holds on a GPU or MIG instance",
                                     labels=[*device_labels, "namespace", "pod"])
        for namespace, pod, device, mib in view.declared:
            declared.add_metric([*dev(device), namespace, pod], mib * _MIB)
        healthy = GaugeMetricFamily(f"{PREFIX}_gpu_healthy",
                                    "1 when the GPU may receive pods, 0 when it is unhealthy",
                                    labels=device_labels)
        for device, ok in view.health:
            healthy.add_metric(dev(device), 1.0 if ok else 0.0)
        episodes = GaugeMetricFamily(f"{PREFIX}_overuse_episodes_open",
                                     "(pod, GPU) pairs over their declared VRAM right now")
        episodes.add_metric([], view.open_episodes)
        yield from (used, declared, healthy, episodes)


class AgentMetrics:
    def __init__(self, node: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self._latest = _Latest()
        self.registry.register(_PassCollector(self._latest, node))
        self.overuse_episodes = Counter(
            f"{PREFIX}_overuse_episodes", "Overuse episodes started (one Event each)",
            ["UUID", "modelName", "GPU_I_PROFILE", "namespace", "pod"], registry=self.registry)
        self.evictions = Counter(f"{PREFIX}_evictions", "Evictions of overusing pods",
                                 ["result"], registry=self.registry)
        self.corrections = Counter(
            f"{PREFIX}_assignment_corrections",
            "Pods whose devices from the kubelet differ from the extender's choice",
            ["node"], registry=self.registry)
        self.publishes = Counter(f"{PREFIX}_annotation_publishes",
                                 "Patches of the node's gpu-extender.io/gpus annotation",
                                 registry=self.registry)
        self.errors = Counter(f"{PREFIX}_pass_errors",
                              "Failed steps of a pass (stage \"pass\": the whole pass)",
                              ["stage"], registry=self.registry)
        self.passes = Counter(f"{PREFIX}_passes", "Passes of the agent loop, by outcome",
                              ["outcome"], registry=self.registry)

    def observe(self, view: PassView) -> None:
        with self._latest.lock:
            self._latest.view = view

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def overuse(self, **labels: Any) -> None:
        self.overuse_episodes.labels(**labels).inc()
