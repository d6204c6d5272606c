"""A small, seeded, openb-like trace for machines without the trace files (and for tests).

Details: node templates and pod classes follow the measured composition of the openb default
trace (``../shared/data/openb``; see the placement-benchmarks reference):

- nodes: G2 8 x GPU 96 vCPU (45 %), T4 2 x GPU 104 vCPU (33 %), P100 2 x GPU 64 vCPU (11 %),
  G3 8 x GPU 128 vCPU (3 %), V100M16 4 x GPU 96 vCPU (5 %), V100M32 8 x GPU 96 vCPU (3 %);
- pods: 13 % CPU-only, 38 % GPU shares (``gpu_milli`` drawn from the trace's most common
  shares), 48 % one whole GPU, 1 % 2/4/8 GPUs; CPU drawn from the trace's common sizes (a
  share asks that much times its share), 3.5 GiB of memory per vCPU; ``typed`` of the GPU
  pods carry a ``gpu_spec`` of one or two models present;
- size: pods are drawn until their GPU demand reaches ``load`` x capacity (the default trace
  asks for 0.98 x capacity).

Everything comes from one ``numpy.random.Generator`` seeded with ``seed``: the same arguments
give the same trace on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from extender.simulator.trace import Trace, TraceNode, TracePod
from extender.units import MILLI


@dataclass(frozen=True)
class NodeTemplate:
    model: str
    gpus: int
    cpu_milli: int
    memory_mib: int
    weight: float


NODE_TEMPLATES = (
    NodeTemplate("G2", 8, 96_000, 393_216, 0.45),
    NodeTemplate("T4", 2, 104_000, 524_288, 0.33),
    NodeTemplate("P100", 2, 64_000, 262_144, 0.11),
    NodeTemplate("G3", 8, 128_000, 786_432, 0.03),
    NodeTemplate("V100M16", 4, 96_000, 393_216, 0.05),
    NodeTemplate("V100M32", 8, 96_000, 393_216, 0.03),
)
SHARES = (810, 470, 320, 650, 230, 460, 590, 160, 550, 220)
SHARE_WEIGHTS = (0.35, 0.24, 0.11, 0.08, 0.05, 0.05, 0.04, 0.03, 0.03, 0.02)
CPU_SIZES = (3_152, 4_000, 6_000, 8_000, 11_300, 11_908, 12_000, 16_000)
MULTI_GPU = ((2, 32_000), (4, 48_000), (8, 88_000))
MEMORY_PER_CORE = 3_584
"""MiB per requested vCPU (the default trace's GPU pods ask ~3.7 GiB per vCPU)."""
POD_CLASSES = ("cpu", "share", "whole", "multi")
POD_CLASS_WEIGHTS = (0.13, 0.38, 0.48, 0.01)


def synthetic_nodes(rng: np.random.Generator, count: int) -> tuple[TraceNode, ...]:
    weights = np.array([t.weight for t in NODE_TEMPLATES])
    picks = rng.choice(len(NODE_TEMPLATES), size=count, p=weights / weights.sum())
    return tuple(TraceNode(name=f"syn-node-{i:04d}", cpu_milli=t.cpu_milli,
                           memory_mib=t.memory_mib, gpus=t.gpus, model=t.model)
                 for i, t in enumerate(NODE_TEMPLATES[int(p)] for p in picks))


def _pod(rng: np.random.Generator, i: int, models: list[str], typed: float,
         memory_per_core: int = MEMORY_PER_CORE) -> TracePod:
    kind = POD_CLASSES[int(rng.choice(len(POD_CLASSES), p=POD_CLASS_WEIGHTS))]
    cpu = int(CPU_SIZES[int(rng.integers(len(CPU_SIZES)))])
    num_gpu, milli = 1, MILLI
    if kind == "cpu":
        num_gpu, milli = 0, 0
    elif kind == "share":
        milli = int(SHARES[int(rng.choice(len(SHARES), p=SHARE_WEIGHTS))])
    elif kind == "multi":
        num_gpu, cpu = MULTI_GPU[int(rng.integers(len(MULTI_GPU)))]
    spec: tuple[str, ...] = ()
    if num_gpu > 0 and models and rng.random() < typed:
        size = min(len(models), 1 + int(rng.integers(2)))
        spec = tuple(sorted(str(m) for m in rng.choice(models, size=size, replace=False)))
    if kind == "share":  # a share asks CPU in proportion (0.47 of a GPU: 0.47 of the CPU)
        cpu = max(1_000, cpu * milli // MILLI // 100 * 100)
    memory = memory_per_core * (cpu // 1000)
    return TracePod(name=f"syn-pod-{i:05d}", cpu_milli=cpu, memory_mib=memory,
                    num_gpu=num_gpu, gpu_milli=milli, gpu_spec=spec)


def synthetic_trace(seed: int = 0, *, nodes: int = 64, load: float = 0.98,
                    typed: float = 0.0, memory_per_core: int = MEMORY_PER_CORE) -> Trace:
    """An openb-like trace: ``nodes`` GPU nodes and pods asking for ``load`` x their GPUs
    (``memory_per_core`` MiB of memory per requested vCPU)."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    rng = np.random.default_rng(seed)
    cluster = synthetic_nodes(rng, nodes)
    models = sorted({n.model for n in cluster})
    target = load * sum(n.gpus for n in cluster) * MILLI
    pods: list[TracePod] = []
    demand = 0
    while demand < target:
        pod = _pod(rng, len(pods), models, typed, memory_per_core)
        pods.append(pod)
        demand += pod.total_milli
    return Trace(name=f"synthetic-{seed}", nodes=cluster, pods=tuple(pods))
