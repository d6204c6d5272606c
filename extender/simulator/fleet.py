"""The typed, priced fleet: a modern heterogeneous cluster with a generated mixed workload.

Nodes: ``alibaba_spot_gpu_v2026/node_info_df.csv`` (``gpu_model,gpu_capacity_num,cpu_num,
node_name``; 4,278 nodes, 10,412 GPUs). Models map onto the catalog (``A10`` -> a10,
``A100-SXM4-80GB`` -> a100-80gb, ``A800-SXM4-80GB`` -> a800-80gb, ``H800`` -> h800); the two
undisclosed series become trace-local types (assumptions, documented in the README):
``GPU-series-1`` -> ``spot-series-1`` (48 GB, L40S-class, 1.86 $/h, unprotected) and
``GPU-series-2`` -> ``spot-series-2`` (96 GB, H20-class, 2.50 $/h, protected). The catalog
protects the A100/A800/H800. Node memory is not in the file: 8 GiB per vCPU is assumed.
``mig_share`` of the A100/A800 nodes and half that share of the H800 nodes have every GPU
MIG-partitioned (dynamic layout), chosen with the seed.

Workload (seeded, ``generate_pods``): pods are drawn from ``POD_MIX`` until their GPU demand
reaches ``load`` x capacity. Classes (weights): untyped whole GPUs 1/2/4/8, untyped
``gpu-milli`` fractions, untyped VRAM shares (8/12/20 GiB), typed whole GPUs on a100 / h800 /
a10 / spot-series-2, typed 40 GiB VRAM shares on a100, and MIG slices 1g.10gb, 2g.20gb,
3g.40gb, 7g.80gb (a MIG profile names the types that have it, as the pod decoder reads it).
Each pod asks 6 vCPU and 24 GiB per GPU-equivalent (at least 2 vCPU / 8 GiB). The demand of a
VRAM share is its VRAM over 24 GiB (the A10, where untyped shares land); of a MIG slice its
slots over 8.

Labels for the report: ``untyped`` (no type named: may never use a protected type when
protection is on), ``typed`` and ``mig``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extender.catalog import Catalog
from extender.model import GpuDevice, GpuRequest, MigLayout, NodeInfo, RequestKind
from extender.platform import Platform
from extender.simulator.errors import TraceError
from extender.simulator.openb import platform_for_models
from extender.simulator.scenario import PodKind, Scenario, shape_counts

FLEET_COLUMNS = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
FLEET_MODELS = {"A10": "a10", "A100-SXM4-80GB": "a100-80gb", "A800-SXM4-80GB": "a800-80gb",
                "H800": "h800", "GPU-series-1": "spot-series-1",
                "GPU-series-2": "spot-series-2"}
LOCAL_TYPES: tuple[dict[str, Any], ...] = (
    {"id": "spot-series-1", "family": "spot-series-1", "memoryMiB": 49_152, "price": 1.86,
     "protected": False, "aliases": ["GPU-series-1"]},
    {"id": "spot-series-2", "family": "spot-series-2", "memoryMiB": 98_304, "price": 2.50,
     "protected": True, "aliases": ["GPU-series-2"]},
)
MIB_PER_VCPU = 8_192
GIB = 1024


@dataclass(frozen=True)
class PodClass:
    """One line of the workload mix."""

    label: str
    kind: RequestKind
    count: int = 1
    milli: int = 0
    vram_gib: int = 0
    mig_profile: str | None = None
    types: tuple[str, ...] = ()
    weight: float = 1.0


POD_MIX: tuple[PodClass, ...] = (
    PodClass("untyped", RequestKind.WHOLE, 1, weight=22),
    PodClass("untyped", RequestKind.WHOLE, 2, weight=3),
    PodClass("untyped", RequestKind.WHOLE, 4, weight=2),
    PodClass("untyped", RequestKind.WHOLE, 8, weight=1),
    PodClass("untyped", RequestKind.FRACTION, 1, milli=500, weight=6),
    PodClass("untyped", RequestKind.FRACTION, 1, milli=250, weight=4),
    PodClass("untyped", RequestKind.VRAM, 1, vram_gib=8, weight=5),
    PodClass("untyped", RequestKind.VRAM, 1, vram_gib=12, weight=4),
    PodClass("untyped", RequestKind.VRAM, 1, vram_gib=20, weight=3),
    PodClass("typed", RequestKind.WHOLE, 8, types=("a100",), weight=2),
    PodClass("typed", RequestKind.WHOLE, 1, types=("a100",), weight=4),
    PodClass("typed", RequestKind.WHOLE, 4, types=("a100", "a800"), weight=1),
    PodClass("typed", RequestKind.WHOLE, 8, types=("h800",), weight=2),
    PodClass("typed", RequestKind.WHOLE, 2, types=("h800",), weight=2),
    PodClass("typed", RequestKind.WHOLE, 1, types=("a10",), weight=6),
    PodClass("typed", RequestKind.WHOLE, 8, types=("spot-series-2",), weight=1),
    PodClass("typed", RequestKind.VRAM, 1, vram_gib=40, types=("a100",), weight=3),
    PodClass("mig", RequestKind.MIG, 1, mig_profile="1g.10gb", weight=8),
    PodClass("mig", RequestKind.MIG, 1, mig_profile="2g.20gb", weight=3),
    PodClass("mig", RequestKind.MIG, 1, mig_profile="3g.40gb", weight=3),
    PodClass("mig", RequestKind.MIG, 1, mig_profile="7g.80gb", weight=1),
)


@dataclass(frozen=True)
class FleetOptions:
    seed: int = 42
    protect: bool = True
    """Protection on: untyped pods never land on protected types (enforced in ``fit``, for
    every policy). Off: the platform protects nothing (how the paper's baselines run)."""
    mig_share: float = 0.3
    load: float = 0.98


def fleet_platform(protect: bool) -> Platform:
    platform = platform_for_models((), extra=LOCAL_TYPES)
    if protect:
        return platform
    return platform_for_models((), extra=LOCAL_TYPES, protected_types=())


def load_fleet_nodes(path: str | Path) -> list[tuple[str, str, int, int]]:
    """(name, model, GPUs, vCPU) per node of a spot-gpu ``node_info_df.csv``."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(source, f"cannot read: {getattr(exc, 'strerror', exc)}") from exc
    rows: list[tuple[str, str, int, int]] = []
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    missing = [c for c in FLEET_COLUMNS if c not in header]
    if missing:
        raise TraceError(source, f"missing column(s) {', '.join(missing)}; expected "
                                 f"{','.join(FLEET_COLUMNS)}", line=1)
    for row in reader:
        line = reader.line_num
        model = (row.get("gpu_model") or "").strip()
        if model not in FLEET_MODELS:
            raise TraceError(source, f"unknown GPU model (accepted: "
                                     f"{', '.join(sorted(FLEET_MODELS))})", line=line,
                             column="gpu_model", value=model)
        numbers = []
        for column in ("gpu_capacity_num", "cpu_num"):
            raw = (row.get(column) or "").strip()
            if not raw.isdigit() or int(raw) < 1:
                raise TraceError(source, "must be a positive integer", line=line,
                                 column=column, value=raw)
            numbers.append(int(raw))
        rows.append((f"spot-node-{(row.get('node_name') or '').strip() or line}", model,
                     numbers[0], numbers[1]))
    if not rows:
        raise TraceError(source, "no nodes in the file")
    return rows


def fleet_nodes(rows: list[tuple[str, str, int, int]], catalog: Catalog,
                rng: np.random.Generator, mig_share: float) -> tuple[NodeInfo, ...]:
    nodes = []
    for name, model, gpus, vcpu in rows:
        type_index = catalog.index_of(FLEET_MODELS[model])
        accel = catalog.types[type_index]
        share = mig_share if model != "H800" else mig_share / 2
        mig = MigLayout(dynamic=True) if accel.mig is not None and rng.random() < share \
            else None
        devices = tuple(GpuDevice(index=i, type_index=type_index, memory_mib=accel.memory_mib,
                                  mig=mig) for i in range(gpus))
        nodes.append(NodeInfo(name=name, gpus=devices, cpu_milli=vcpu * 1000,
                              memory_mib=vcpu * MIB_PER_VCPU, type_name=model))
    return tuple(nodes)


def _request(spec: PodClass, catalog: Catalog) -> tuple[GpuRequest, int]:
    """The decoded request of a pod class and its GPU demand in thousandths."""
    types: frozenset[int] | None = None
    if spec.types:
        types = frozenset().union(*(catalog.resolve(t) or frozenset() for t in spec.types))
    if spec.kind is RequestKind.MIG:
        assert spec.mig_profile is not None
        types = catalog.types_with_mig_profile(spec.mig_profile)
        p = catalog.mig.index[spec.mig_profile]
        slices = int(catalog.mig.slices[p][catalog.index_of("a100-80gb")])
        return GpuRequest(RequestKind.MIG, spec.count, mig_profile=spec.mig_profile,
                          types=types), slices * 1000 // 8 * spec.count
    if spec.kind is RequestKind.VRAM:
        vram = spec.vram_gib * GIB
        return GpuRequest(RequestKind.VRAM, 1, vram_mib=vram, types=types), \
            min(1000, vram * 1000 // (24 * GIB))
    if spec.kind is RequestKind.FRACTION:
        return GpuRequest(RequestKind.FRACTION, 1, milli=spec.milli, types=types), spec.milli
    return GpuRequest(RequestKind.WHOLE, spec.count, types=types), spec.count * 1000


def generate_pods(catalog: Catalog, rng: np.random.Generator, capacity_milli: int,
                  load: float) -> tuple[tuple[PodKind, ...], np.ndarray]:
    """(pod kinds, kind of each pod) drawn from ``POD_MIX`` up to ``load`` x capacity."""
    kinds = []
    for spec in POD_MIX:
        request, demand = _request(spec, catalog)
        gpus = max(demand / 1000, 0.25)
        kinds.append(PodKind(request, cpu_milli=max(2000, int(6000 * gpus)),
                             memory_mib=max(8 * GIB, int(24 * GIB * gpus)),
                             demand_milli=demand, label=spec.label))
    weights = np.array([s.weight for s in POD_MIX], dtype=np.float64)
    demands = np.array([k.demand_milli for k in kinds], dtype=np.int64)
    mean = float((weights / weights.sum()) @ demands)
    count = int(load * capacity_milli / mean)
    picks = rng.choice(len(kinds), size=count, p=weights / weights.sum())
    return tuple(kinds), picks.astype(np.int64)


def fleet_scenario(path: str | Path, options: FleetOptions) -> Scenario:
    rows = load_fleet_nodes(path)
    platform = fleet_platform(options.protect)
    rng = np.random.default_rng(np.random.SeedSequence([options.seed, 2026]))
    nodes = fleet_nodes(rows, platform.catalog, rng, options.mig_share)
    capacity = sum(len(n.gpus) for n in nodes) * 1000
    kinds, pod_kind = generate_pods(platform.catalog, rng, capacity, options.load)
    return Scenario(name="spot-fleet" + ("" if options.protect else "-unprotected"),
                    platform=platform, nodes=nodes, kinds=kinds, pod_kind=pod_kind,
                    pod_names=tuple(f"fleet-pod-{i:06d}" for i in range(len(pod_kind))),
                    typical=shape_counts(kinds, pod_kind))
