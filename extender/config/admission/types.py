"""Admission webhook settings as frozen typed objects (YAML: ``admission:``, camelCase)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SHARE_KINDS = ("vram", "fraction", "shared")
WORKLOAD_MODES = ("warn", "refuse", "off")
"""``admission.workloads``: what /validate does with a workload whose pod template the extender
would refuse (a Deployment, StatefulSet, ReplicaSet, DaemonSet, Job or CronJob)."""
"""Request kinds whose GPU the extender picks inside a node (``RequestKind`` values)."""


@dataclass(frozen=True)
class SchedulerNameConfig:
    enabled: bool = True
    """Move GPU pods that use ``default-scheduler`` to ``name``. Turn off when the extender runs
    behind the default scheduler (scheduler-config/default-scheduler-with-extender.yaml)."""
    name: str = "gpu-scheduler"


@dataclass(frozen=True)
class GpuTypeMapping:
    """One entry of Flyte's ``gpu_types`` shape: a GPU type -> node selector -> tolerations."""

    name: str
    """Catalog id, family or alias (a family maps every member)."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    """Labels a node of this type carries. Empty: derived from ``typeLabel``."""
    tolerations: tuple[Mapping[str, Any], ...] = ()
    """Tolerations for the taints nodes of this type carry (Kubernetes toleration objects)."""


@dataclass(frozen=True)
class PartitionConfig:
    enabled: bool = True
    """A MIG pod requires ``label In [<profile>]``; a whole-GPU pod ``label DoesNotExist``
    (Flyte's ``unpartitioned``), so autoscalers start, and kube-scheduler picks, the right
    pool. Only where a partition label is known."""
    label: str | None = None
    """The node label holding the partition size. ``None``: the ``typeLabel`` preset's own
    (GKE: ``cloud.google.com/gke-gpu-partition-size``); no other preset has one."""
    tolerate: bool = False
    """Also add ``<label>=<profile>:NoSchedule`` to MIG pods (Flyte does, for tainted
    partition pools)."""


@dataclass(frozen=True)
class PlatformMappingConfig:
    enabled: bool = True
    type_label: str | None = None
    """The label convention the cluster's nodes (and its autoscaler) use: a preset name (gfd,
    gke, eks-karpenter, aks) or a key of ``nodeLabels.custom``. ``None``: only ``gpuTypes``
    entries with a ``nodeSelector`` write affinity."""
    gpu_types: tuple[GpuTypeMapping, ...] = ()
    partitions: PartitionConfig = field(default_factory=PartitionConfig)


@dataclass(frozen=True)
class VisibleDevicesConfig:
    enabled: bool = True
    """Give share pods ``env`` from the ``gpu-extender.io/visible-devices`` annotation (downward
    API) in every container that does not set it."""
    env: str = "NVIDIA_VISIBLE_DEVICES"
    kinds: tuple[str, ...] = SHARE_KINDS


@dataclass(frozen=True)
class RuntimeClassConfig:
    enabled: bool = False
    """Set ``spec.runtimeClassName`` on GPU pods that name none (a pod's own value is never
    overridden): GPU Operator clusters where ``nvidia`` is not the default runtime (before
    25.10, docs/handoff.md). Off by default: on 26.3+ the ``nvidia`` class is gone."""
    name: str = "nvidia"


@dataclass(frozen=True)
class AdmissionConfig:
    warnings: bool = True
    """Answer odd but valid GPU requests with warnings (kubectl prints them)."""
    workloads: str = "warn"
    """A workload whose pod template the extender would refuse: ``warn`` (admitted, kubectl
    prints why its pods will be refused), ``refuse`` (not admitted) or ``off``."""
    scheduler_name: SchedulerNameConfig = field(default_factory=SchedulerNameConfig)
    platform_mapping: PlatformMappingConfig = field(default_factory=PlatformMappingConfig)
    visible_devices: VisibleDevicesConfig = field(default_factory=VisibleDevicesConfig)
    runtime_class: RuntimeClassConfig = field(default_factory=RuntimeClassConfig)
