"""The mix of request shapes the cluster sees: FGD's "target workload".

Fragmentation is only meaningful against what will arrive next: a GPU with 0.3 free is
fragmented for 0.5-GPU pods and useful for 0.25-GPU pods. The mix is either given (the simulator
takes it from the trace, as FGD does) or learned online from the pods the extender is asked to
place (exponentially decayed counts, so it follows a drifting workload).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from extender.model import GpuRequest, RequestKind


@dataclass(frozen=True)
class Shape:
    """One request shape. ``gpus`` is 0 for a CPU-only pod.

    Per-GPU demand is ``milli`` thousandths of a GPU, or ``vram_mib`` (a VRAM share, whose
    fraction depends on the GPU it lands on).
    """

    gpus: int
    milli: int = 1000
    vram_mib: int = 0
    cpu_milli: int = 0
    types: frozenset[int] | None = None


def shape_of(request: GpuRequest | None, cpu_milli: int = 0) -> Shape | None:
    """The shape of a request in the fragmentation model; ``None`` for kinds the model does
    not cover (MIG instances and time-slice replicas live on partitioned or shared GPUs that
    the model leaves out)."""
    if request is None:
        return Shape(gpus=0, milli=0, cpu_milli=cpu_milli)
    types = None if request.types is None else request.types - request.excluded
    if request.kind is RequestKind.WHOLE:
        return Shape(request.count, 1000, 0, cpu_milli, types)
    if request.kind is RequestKind.FRACTION:
        return Shape(1, request.milli, 0, cpu_milli, types)
    if request.kind is RequestKind.VRAM:
        return Shape(1, 0, request.vram_mib, cpu_milli, types)
    return None


def typical_shapes(counts: Mapping[Shape, float], coverage: float = 0.95
                   ) -> dict[Shape, float]:
    """FGD's typical pods: the most popular shapes covering ``coverage`` of the weight,
    renormalised to sum to 1 (``GetTypicalPods``, popularity threshold 95 %, step 1).

    Details: shapes are taken in decreasing count until the kept count reaches ``coverage``
    of the total; equal counts are ordered as the FGD simulator orders them (``sort.Reverse``
    of ``PodResource.Less``: more CPU first, then more GPU thousandths, then more GPUs), which
    decides which shape closes the 95 % when counts tie."""
    total = sum(counts.values())
    if total <= 0:
        return {}
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], _order_key(kv[0])))
    kept: dict[Shape, float] = {}
    covered = 0.0
    for shape, weight in ordered:
        if covered >= coverage * total:
            break
        kept[shape] = weight
        covered += weight
    norm = sum(kept.values())
    return {shape: weight / norm for shape, weight in kept.items()}


def _order_key(shape: Shape) -> tuple[int, int, int, int, int, tuple[int, ...]]:
    """Ascending key for equal counts: descending CPU, thousandths, GPUs (Go's order), then
    VRAM and typed before untyped (Go compares the type strings; "" sorts last)."""
    return (-shape.cpu_milli, -shape.milli, -shape.gpus, -shape.vram_mib,
            0 if shape.types is not None else 1,
            tuple(-t for t in sorted(shape.types)) if shape.types is not None else ())


def gpu_equivalents(shape: Shape) -> float:
    """GPUs a shape takes (a VRAM share counts as a whole GPU: its fraction depends on where
    it lands)."""
    if shape.gpus == 0:
        return 0.0
    return shape.gpus * (shape.milli / 1000.0 if shape.milli > 0 else 1.0)


class WorkloadMix:
    """Decayed counts of observed shapes, and the memory GPU pods ask per GPU; thread-safe.

    ``half_life`` is in observed pods: a shape seen ``half_life`` pods ago weighs half as much
    as one seen now. ``version`` changes whenever the typical shapes may have changed, so
    scorers rebuild their tables only then. ``memory_per_gpu`` (MiB per GPU-equivalent, over
    GPU pods) is the prior for ``memory_per_gpu()`` until pods with memory are observed.
    """

    def __init__(self, prior: Iterable[tuple[Shape, float]] = (), *, half_life: float = 2000,
                 rebuild_every: int = 200, memory_per_gpu: float | None = None) -> None:
        self._decay = 0.5 ** (1.0 / half_life)
        self._counts: dict[Shape, float] = dict(prior)
        self._lock = threading.Lock()
        self._since_rebuild = 0
        self._rebuild_every = rebuild_every
        self._memory = memory_per_gpu or 0.0
        """Decayed MiB asked by GPU pods (with ``_gpus``: a decayed ratio)."""
        self._gpus = 1.0 if memory_per_gpu else 0.0
        self.version = 0

    def observe(self, shape: Shape | None, memory_mib: int = 0) -> None:
        """Count one pod's shape; ``memory_mib``: what it asks (0: unknown, not counted)."""
        if shape is None:
            return
        with self._lock:
            for key in self._counts:
                self._counts[key] *= self._decay
            new_shape = shape not in self._counts
            self._counts[shape] = self._counts.get(shape, 0.0) + 1.0
            gpus = gpu_equivalents(shape)
            if gpus > 0 and memory_mib > 0:
                self._memory = self._memory * self._decay + memory_mib
                self._gpus = self._gpus * self._decay + gpus
            self._since_rebuild += 1
            # a new shape may enter the typical set at once; otherwise the mix drifts slowly
            if self._since_rebuild >= self._rebuild_every or new_shape:
                self._since_rebuild = 0
                self.version += 1

    def memory_per_gpu(self) -> float | None:
        """MiB GPU pods ask per GPU they take (decayed mean); ``None`` before any is known."""
        with self._lock:
            return self._memory / self._gpus if self._gpus > 0 and self._memory > 0 else None

    def typical(self, coverage: float = 0.95) -> dict[Shape, float]:
        with self._lock:
            return typical_shapes(dict(self._counts), coverage)
