"""What a platform engineer can tune, as frozen typed objects.

The YAML is camelCase (Kubernetes style); the attribute docstrings give units and why each
default is what it is. Defaults live in ``defaults.py``, checks in ``validation.py``, parsing in
``loader.py``: these types only describe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from extender.catalog.types import AcceleratorType
from extender.config.admission.types import AdmissionConfig
from extender.config.demand.types import DemandConfig
from extender.config.score_cut.types import ScoreCutConfig


@dataclass(frozen=True)
class LabelMapping:
    """A node label that names the GPU type (Flyte-style mapping owned by the platform team)."""

    key: str
    """Label key, e.g. ``k8s.amazonaws.com/accelerator``."""
    values: Mapping[str, str] = field(default_factory=dict)
    """Label value -> catalog name. Empty: the value itself is looked up in the catalog."""


@dataclass(frozen=True)
class InstanceTypeEntry:
    """The GPUs one cloud instance type carries (shipped table, or a config override)."""

    type_name: str
    """A catalog name (id, family or alias)."""
    count: int
    """Physical GPUs per node."""


@dataclass(frozen=True)
class FlyteLabels:
    """The node label keys flytepropeller writes into pods (its ``plugins.k8s`` config)."""

    device_key: str = "k8s.amazonaws.com/accelerator"
    """``gpu-device-node-label``."""
    partition_key: str = "k8s.amazonaws.com/gpu-partition-size"
    """``gpu-partition-size-node-label``."""


@dataclass(frozen=True)
class NodeLabelConfig:
    presets: tuple[str, ...]
    """Built-in label conventions to read, in priority order: gfd, gke, eks-karpenter, aks,
    flyte."""
    custom: tuple[LabelMapping, ...] = ()
    """Extra label mappings; they win over presets."""
    instance_types: Mapping[str, InstanceTypeEntry] = field(default_factory=dict)
    """Shipped instance-type table overlaid with the config's ``instanceTypes`` (normalized
    name -> entry)."""
    flyte: FlyteLabels = field(default_factory=FlyteLabels)
    """Label keys of the ``flyte`` preset (follow a flytepropeller config that changed them)."""


@dataclass(frozen=True)
class VramResource:
    """A per-node VRAM resource another tool advertises (``aliyun.com/gpu-mem``)."""

    name: str
    unit_mib: int
    """MiB per unit of the resource (GiB: 1024; 0: the value is a byte quantity like 4Gi)."""


@dataclass(frozen=True)
class ForeignFormsConfig:
    """Request forms of other GPU-sharing tools that pods may keep using (each on by default)."""

    hami: bool = True
    """HAMi: ``nvidia.com/gpumem`` (MiB), ``nvidia.com/gpumem-percentage`` and the
    ``nvidia.com/use-gputype`` / ``nvidia.com/nouse-gputype`` annotations."""
    kai: bool = True
    """KAI Scheduler: ``gpu-fraction`` and ``gpu-memory`` (MiB) pod annotations."""
    vram_resources: tuple[VramResource, ...] = ()
    """Extended resources that mean a VRAM share of one GPU."""


@dataclass(frozen=True)
class ProtectionConfig:
    protected_types: tuple[str, ...] | None
    """Names (ids or families) untyped pods may never use. ``None``: the catalog's flags."""
    namespaces: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Namespace -> protected names its untyped pods may use anyway (``"*"`` = all)."""


@dataclass(frozen=True)
class Weight:
    """One weight a scoring strategy declares (scikit-learn's ``_parameter_constraints``):
    the config layer checks ``scoring.weights.<key>`` against it, the strategy reads its
    value or the default."""

    default: float
    low: float
    """Smallest accepted value (inclusive)."""
    high: float
    """Largest accepted value (inclusive; ``math.inf``: unbounded)."""
    doc: str
    """What the weight does, for error messages."""
    flag: bool = False
    """An on/off switch: only 0 and 1 are accepted."""


@dataclass(frozen=True)
class ScoringConfig:
    strategy: str
    """Registered scoring strategy (``gpu-extender check-config`` lists them)."""
    weights: Mapping[str, float] = field(default_factory=dict)
    """Strategy-specific weights; each strategy declares the keys it reads (``Weight``), and
    validation rejects any other key."""
    score_ahead: bool = True
    """Score the next pod of a burst once an answer is out, taken only where exact
    (``scheduling/speculation.py``); off: every call scores itself."""


@dataclass(frozen=True)
class ServiceConfig:
    reservation_ttl_seconds: float = 30.0
    """How long a placement chosen in prioritize is held for the bind that should follow it.
    kube-scheduler binds within milliseconds; 30 s covers a slow API server without letting a
    pod that was never bound block a GPU for long."""
    reconcile_interval_seconds: float = 300.0
    """Period of the full relist that repairs drift between watch and inventory."""
    check_cpu_memory: bool = False
    """Also check node CPU and memory in filter. kube-scheduler already does; the simulator
    turns this on because there is no kube-scheduler in it."""
    placement_events: bool = True
    """Write the Normal ``GpuAssigned`` event on every bind. Off, the bind writes one API
    object less per pod (the event is the pipeline's third write per pod, after
    kube-scheduler's Binding and its ``Scheduled`` event: benchmarks/README.md, issue 22);
    the ``pod placed`` log line, the assignment annotations and ``/debug/explain`` keep the
    same facts. Warning events (a failed bind) are written either way."""
    event_qps: float = 20.0
    """While placements keep coming, Normal events are written at most this many per second
    (a token bucket, as kubelet paces its events); the rest wait, composed, and are written
    once no placement has come for a second. 0: no pacing (benchmarks/README.md, issue 22).
    The default is kube-controller-manager's client pace (``--kube-api-qps`` 20,
    ``--kube-api-burst`` 30): a cluster-wide controller's, where kubelet's 50 / 100 are one
    node's."""
    event_burst: int = 30
    """The bucket's size: events written at once before the pace applies (``eventBurst``)."""
    gpu_series: bool = True
    """Serve the per-GPU series on ``/metrics`` (eight per GPU, dcgm-exporter's labels).
    Off, a fleet's scrape stays small (10,000 nodes x 8 GPUs are ~400,000 series, 36 MB per
    scrape); the per-type totals stay."""


class HandoffMode(StrEnum):
    """How the GPU a VRAM share or fraction is booked on reaches its containers
    (docs/handoff.md)."""

    CDI = "cdi"
    """The Binding also writes ``nvidia.cdi.k8s.io/container.<name>`` (the toolkit's NRI
    plugin injects the device); the downward-API env stays for runtimes that read it."""
    ENV = "env"
    """Only the downward-API ``NVIDIA_VISIBLE_DEVICES`` (GPU Operator before 25.10, the
    ``nvidia`` runtime honouring the env var of unprivileged pods)."""
    NONE = "none"
    """Nothing reaches the container (GKE: no NVIDIA runtime): shares are refused there."""


@dataclass(frozen=True)
class HandoffConfig:
    """Per node pool: a node's ``node_label`` wins, then the first preset whose type label the
    node carries, then ``default``."""

    default: HandoffMode = HandoffMode.CDI
    presets: Mapping[str, HandoffMode] = field(
        default_factory=lambda: {"gke": HandoffMode.NONE})
    """Label preset name (``nodeLabels.presets``) -> mode of the nodes carrying its type label.
    GKE runs no NVIDIA runtime: its device plugin hands out ``/dev/nvidiaN`` itself."""
    node_label: str = "gpu-extender.io/handoff"
    """A node label whose value (cdi, env, none) sets the mode of its pool."""


@dataclass(frozen=True)
class PlatformConfig:
    accelerators: tuple[AcceleratorType, ...]
    node_labels: NodeLabelConfig
    protection: ProtectionConfig
    scoring: ScoringConfig
    service: ServiceConfig
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    """What the admission webhook refuses, warns about and writes (``gpu-extender webhook``)."""
    foreign_forms: ForeignFormsConfig = field(default_factory=ForeignFormsConfig)
    handoff: HandoffConfig = field(default_factory=HandoffConfig)
    """How a share's GPU reaches its containers, per node pool (docs/handoff.md)."""
    demand: DemandConfig = field(default_factory=DemandConfig)
    """What ``gpu-extender demand`` asks autoscalers for (docs/autoscaling.md)."""
    score_cut: ScoreCutConfig = field(default_factory=ScoreCutConfig)
    """Filter answers only the nodes that can still win (docs/score-cut.md)."""
