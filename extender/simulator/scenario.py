"""What one replay needs: a platform, its nodes, and a workload of pod kinds.

A ``PodKind`` is one distinct request (what the pod decoder would produce) with its CPU and
memory; trace pods with the same kind share it, so a request is resolved against the catalog
once per kind, not once per pod. ``demand_milli`` is the pod's GPU demand in thousandths of a
GPU, the x-axis of every curve ("arrived GPU demand", FGD's ``arrived_gpu_milli``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from extender.core.workload import Shape, shape_of
from extender.model import GpuRequest, NodeInfo, RequestKind
from extender.platform import Platform
from extender.simulator.errors import TraceError
from extender.simulator.openb import node_info, platform_for_models, pod_request
from extender.simulator.trace import Trace
from extender.units import MILLI


@dataclass(frozen=True)
class PodKind:
    request: GpuRequest
    cpu_milli: int
    memory_mib: int
    demand_milli: int
    namespace: str = ""
    label: str = ""
    """Free-form class for reports (the fleet scenario: ``typed``, ``untyped``...)."""

    @property
    def gpu_pod(self) -> bool:
        return self.request.kind is not RequestKind.WHOLE or self.request.count > 0


@dataclass(frozen=True, eq=False)
class Scenario:
    """A cluster and a workload, ready to replay under any policy."""

    name: str
    platform: Platform
    nodes: tuple[NodeInfo, ...]
    kinds: tuple[PodKind, ...]
    pod_kind: npt.NDArray[np.int64]
    """(n_pods,) kind of each trace pod."""
    pod_names: tuple[str, ...]
    typical: dict[Shape, float] = field(default_factory=dict)
    """Counts per request shape of the trace (FGD's target workload before the 95 % cut)."""

    @property
    def gpu_count(self) -> int:
        return sum(len(n.gpus) for n in self.nodes)

    @property
    def capacity_milli(self) -> int:
        return self.gpu_count * MILLI

    def memory_per_gpu(self) -> float | None:
        """MiB the trace's GPU pods ask per GPU of demand (the workload's prior)."""
        counts = np.bincount(self.pod_kind, minlength=len(self.kinds))
        memory = sum(int(c) * k.memory_mib for c, k in zip(counts, self.kinds, strict=True)
                     if k.demand_milli > 0)
        gpus = sum(int(c) * k.demand_milli for c, k in zip(counts, self.kinds, strict=True)
                   ) / MILLI
        return memory / gpus if memory > 0 and gpus > 0 else None

    def demand(self) -> npt.NDArray[np.int64]:
        """(n_pods,) GPU demand of each trace pod in thousandths."""
        per_kind = np.array([k.demand_milli for k in self.kinds], dtype=np.int64)
        return per_kind[self.pod_kind]


def shape_counts(kinds: tuple[PodKind, ...], pod_kind: npt.NDArray[np.int64]
                 ) -> dict[Shape, float]:
    """How many trace pods have each shape (memory excluded, CPU-only pods included)."""
    counts: dict[Shape, float] = {}
    per_kind = np.bincount(pod_kind, minlength=len(kinds))
    for kind, count in zip(kinds, per_kind, strict=True):
        shape = shape_of(None if not kind.gpu_pod else kind.request, kind.cpu_milli)
        if shape is not None and count > 0:
            counts[shape] = counts.get(shape, 0.0) + float(count)
    return counts


def openb_scenario(trace: Trace, *, pods_source: str = "pods", nodes_source: str = "nodes",
                   platform: Platform | None = None) -> Scenario:
    """An openb trace as the service would see it (see ``extender.simulator.openb``)."""
    models = {n.model for n in trace.nodes if n.gpus > 0}
    models |= {m for p in trace.pods for m in p.gpu_spec}
    platform = platform or platform_for_models(models)
    catalog = platform.catalog
    nodes = tuple(node_info(n, catalog, nodes_source) for n in trace.nodes)
    index: dict[tuple[object, ...], int] = {}
    kinds: list[PodKind] = []
    pod_kind = np.zeros(len(trace.pods), dtype=np.int64)
    for i, pod in enumerate(trace.pods):
        key = (pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.gpu_milli, pod.gpu_spec)
        k = index.get(key)
        if k is None:
            try:
                request = pod_request(pod, catalog, pods_source)
            except TraceError as exc:
                raise TraceError(pods_source, f"pod {pod.name}: {exc.problem}",
                                 column=exc.column, value=exc.value) from exc
            k = index[key] = len(kinds)
            kinds.append(PodKind(request, pod.cpu_milli, pod.memory_mib, pod.total_milli))
        pod_kind[i] = k
    frozen = tuple(kinds)
    return Scenario(name=trace.name, platform=platform, nodes=nodes, kinds=frozen,
                    pod_kind=pod_kind, pod_names=tuple(p.name for p in trace.pods),
                    typical=shape_counts(frozen, pod_kind))
