"""The default strategy (``cost-fragmentation``) written from its docstring, one node and one
GPU at a time, on the naive reference's plain-Python view of the snapshot.

Only the inputs the docstring leaves to the strategy are taken from it: its weights, its salt
(the seeded node order) and its typical shapes. Everything else (F before/after, stranded
memory, typed claims, the keys and their ranks) is recomputed here without numpy.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.core.scoring.cost_fragmentation import CLAIM_FLOOR
from extender.core.workload import Shape, gpu_equivalents
from extender.inventory import ClusterSnapshot
from extender.model import GpuRequest, RequestKind
from tests.reference.naive import MILLI, NaiveReference, node_view


@dataclass(frozen=True)
class OracleNode:
    row: int
    choice: int
    loss: float
    key: tuple[int, ...]
    taken: float = 0.0
    """GPU-equivalents the pod takes on the node."""


def ceil_bucket(loss: float, resolution: float) -> int:
    return math.ceil(loss / resolution - 1e-9)


def claims(ref: NaiveReference, snapshot: ClusterSnapshot,
           shapes: Mapping[Shape, float]) -> list[float]:
    """claim(t) = clip((d_t / f_t - 1/2) / (1/2), 0, 1) per catalog type (and unknown)."""
    n_types = len(ref.catalog) + 1
    demand = [0.0] * n_types
    total = 0.0
    for shape, weight in shapes.items():
        gpus = gpu_equivalents(shape)
        total += weight * gpus
        for t in shape.types or ():
            demand[t] += weight * gpus / len(shape.types or ())
    demand = [d / max(total, 1e-9) for d in demand]
    free = [0.0] * n_types
    for row in range(snapshot.n_nodes):
        if not snapshot.node_valid[row]:
            continue
        for g in node_view(snapshot, row).gpus:
            free[g.type_index] += 1.0 - ref.used_fraction(g)
    all_free = max(sum(free), 1e-9)
    out = []
    for d, f in zip(demand, free, strict=True):
        share = f / all_free
        ratio = d / share if share > 0 else 0.0
        out.append(min(max((ratio - CLAIM_FLOOR) / (1.0 - CLAIM_FLOOR), 0.0), 1.0))
    return out


def cpu_to_spare(ref: NaiveReference, snapshot: ClusterSnapshot,
                 shapes: Mapping[Shape, float], room: float) -> bool:
    """The mix's CPU per GPU (every shape, CPU-only ones included) <= ``room`` x the free CPU
    of the nodes with GPUs per free GPU: e.g. shapes 1 GPU / 8 CPU and 0 GPU / 4 CPU at equal
    weight ask 12 CPU per GPU; 4 free GPUs beside 60 free CPU give 15 per GPU, and
    12 <= 0.9 x 15 = 13.5."""
    cpu = sum(w * s.cpu_milli for s, w in shapes.items())
    gpus = sum(w * gpu_equivalents(s) for s, w in shapes.items())
    if gpus <= 0 or cpu <= 0:
        return True
    free_gpus = free_cpu = 0.0
    for row in range(snapshot.n_nodes):
        if not snapshot.node_valid[row]:
            continue
        node = node_view(snapshot, row)
        if node.gpus:
            free_gpus += sum(1.0 - ref.used_fraction(g) for g in node.gpus)
            free_cpu += node.cpu_free
    return free_gpus <= 0 or cpu / gpus * free_gpus <= room * free_cpu


def gpu_cpu_per_gpu(shapes: Mapping[Shape, float]) -> float:
    """CPU (milli) the GPU shapes ask per GPU: 1 GPU / 8 CPU and 0.5 GPU / 2 CPU at equal
    weight ask 10 CPU per 1.5 GPU, 6,667 milli per GPU (CPU-only shapes left out)."""
    gpu_shapes = [(s, w) for s, w in shapes.items() if gpu_equivalents(s) > 0]
    gpus = sum(w * gpu_equivalents(s) for s, w in gpu_shapes)
    return sum(w * s.cpu_milli for s, w in gpu_shapes) / gpus if gpus > 0 else 0.0


def leftover(sizes: Sequence[int], free: int) -> float:
    """W(free): GPUs a slice of ``free`` thousandths keeps once the fullest sum of ``sizes``
    that fits is taken (sizes 470, 320, 220 and 530 free: 470 is the fullest, W = 0.06)."""
    reachable = {0}
    for v in range(1, free + 1):
        if any(v - s in reachable for s in sizes if 0 < s <= v):
            reachable.add(v)
    return (free - max(reachable)) / MILLI


def default_keys(ref: NaiveReference, snapshot: ClusterSnapshot, req: GpuRequest,
                 rows: Sequence[int], units: Mapping[int, Sequence[int]], *,
                 shapes: Mapping[Shape, float], weights: Mapping[str, float], salt: int,
                 memory_per_gpu: float | None, cpu_milli: int = 0, memory_mib: int = 0
                 ) -> list[OracleNode]:
    resolution = weights["fragResolution"]
    claim = claims(ref, snapshot, shapes)
    catalog = ref.catalog
    unknown = len(catalog)
    share = req.kind in (RequestKind.FRACTION, RequestKind.VRAM)
    # the fillers of W: one-GPU share sizes held by at least gapFillers of the share pods
    # (with gapFillers 0.03, a 0.47 asked by 60 % of them counts, a 0.16 asked by 2 % not)
    share_mass: dict[int, float] = {}
    for s, w in shapes.items():
        if s.gpus == 1 and s.vram_mib == 0 and 0 < s.milli < MILLI:
            share_mass[s.milli] = share_mass.get(s.milli, 0.0) + w
    share_total = sum(share_mass.values())
    share_sizes = [size for size, w in share_mass.items()
                   if w >= weights.get("gapFillers", 0.0) * share_total]
    gap_weight = weights.get("gapWeight", 0.0)
    # dS and dP weigh at most scarceWeight while CPU is scarce (with memoryWeight 2 and
    # scarceWeight 1: 2 on a cluster with CPU to spare, 1 on one without)
    memory_weight, cpu_weight = weights["memoryWeight"], weights.get("cpuWeight", 0.0)
    cap = weights["scarceWeight"]
    if not cpu_to_spare(ref, snapshot, shapes, weights["idlePriceCpu"]):
        memory_weight, cpu_weight = min(memory_weight, cap), min(cpu_weight, cap)
    out = []
    for row in rows:
        node = node_view(snapshot, row)
        before = ref.node_frag(snapshot, row, shapes)
        with_unit = [g for g in node.gpus if units[row][g.slot] > 0]
        if share:
            # the GPU: smallest bucket of dF + dW x gapWeight, then least free thousandths,
            # then lowest slot; dW = W(free - size) - W(free), W(free) = 0 on a whole free GPU
            best: tuple[int, int, int, float, float, float] | None = None
            for g in with_unit:
                after = ref.frag_after(snapshot, req, row, shapes, cpu_milli=cpu_milli,
                                       slots=[g.slot])
                free = min(max(g.free, 0) * MILLI // max(g.total, 1), MILLI)
                taken = req.milli / MILLI if req.kind is RequestKind.FRACTION else \
                    req.vram_mib / max(g.total, 1)
                size = req.milli if req.kind is RequestKind.FRACTION else \
                    -(-req.vram_mib * MILLI // max(g.total, 1))
                gap = 0.0
                if gap_weight:
                    gap = gap_weight * (leftover(share_sizes, max(free - size, 0)) -
                                        (0.0 if free >= MILLI else leftover(share_sizes, free)))
                rank = (ceil_bucket((after - before) / MILLI + gap, resolution), free, g.slot)
                if best is None or rank < best[:3]:
                    best = (*rank, (after - before) / MILLI, taken, gap)
            assert best is not None
            choice, delta, taken, gap_loss = best[2], best[3], best[4], best[5]
        else:
            after = ref.frag_after(snapshot, req, row, shapes, cpu_milli=cpu_milli,
                                   slots=[g.slot for g in with_unit[: req.count]])
            delta = (after - before) / MILLI
            choice = -1
            takes = [ref.take_fraction(req, g) for g in with_unit]
            taken = (min(takes) if takes else 0.0) * req.count
            gap_loss = 0.0
        # dS: GPUs left without the memory their pods would need
        stranded = 0.0
        if memory_per_gpu and memory_weight:
            free_gpus = sum(1.0 - ref.used_fraction(g) for g in node.gpus)
            s_before = max(0.0, free_gpus - node.memory_free / memory_per_gpu)
            s_after = max(0.0, free_gpus - taken - (node.memory_free - memory_mib)
                          / memory_per_gpu)
            stranded = s_after - s_before
        if choice >= 0:
            taken_type = next(g.type_index for g in node.gpus if g.slot == choice)
        else:
            taken_type = node.gpus[0].type_index if node.gpus and node.gpus[0].slot == 0 \
                else unknown
        loss = delta + gap_loss + memory_weight * stranded
        if cpu_weight:
            # dP: GPUs left without the CPU their pods would need, as dS with the GPU
            # shapes' CPU per GPU: 2 free GPUs beside 12 CPU at 8 CPU per GPU strand
            # max(0, 2 - 12 / 8) = 0.5 before; a 1-GPU pod with 8 CPU leaves
            # max(0, 1 - 4 / 8) = 0.5 after: dP = 0
            per_gpu = gpu_cpu_per_gpu(shapes)
            if per_gpu > 0:
                free_gpus = sum(1.0 - ref.used_fraction(g) for g in node.gpus)
                p_before = max(0.0, free_gpus - node.cpu_free / per_gpu)
                p_after = max(0.0, free_gpus - taken - (node.cpu_free - cpu_milli) / per_gpu)
                loss += cpu_weight * (p_after - p_before)
        if weights["claimWeight"]:
            loss += weights["claimWeight"] * taken * claim[taken_type]
        if weights["costWeight"]:
            prices = [catalog.types[t].price for r in range(snapshot.n_nodes)
                      for t in (int(x) for x in snapshot.gpu_type[r]) if t >= 0]
            mean = sum(prices) / len(prices) if prices else 1.0
            loss *= (catalog.price[taken_type] / max(mean, 1e-9)) ** weights["costWeight"]
        idle = 0 if any(g.pods > 0 for g in node.gpus) else 1
        priority = zlib.crc32(snapshot.node_names[row].encode(), salt)  # the node's name
        typed = req.types or ()
        names_prices = weights["typedCost"] > 0 and len(typed) > 1 and \
            not (req.kind is RequestKind.WHOLE and req.count == 0) and \
            len({float(catalog.price[t]) for t in typed}) > 1
        price = round(float(catalog.price[taken_type]) * 1000)
        if not names_prices:  # idlePrice: what opening the node adds to the bill
            price = round(sum(float(catalog.price[g.type_index]) for g in node.gpus
                              if g.type_index >= 0) * 1000)
        out.append(OracleNode(row, choice, loss, (ceil_bucket(loss, resolution), idle, price,
                                                  priority), taken))
    # the keys: the price itself between types the pod names; else, with idlePrice and CPU to
    # spare, the node's $/h on idle nodes only (0 on used ones); with elasticNodes the idle
    # bit goes first
    any_taken = any(n.taken > 0 for n in out) and \
        cpu_to_spare(ref, snapshot, shapes, weights["idlePriceCpu"])
    keyed = []
    for n in out:
        bucket, idle, price, priority = n.key
        key: tuple[int, ...]
        if names_prices:
            key = (bucket, idle, price, priority)
        elif weights["idlePrice"] > 0 and any_taken:
            key = (bucket, idle, price * idle, priority)
        else:
            key = (bucket, idle, priority)
        if weights["elasticNodes"] > 0:
            key = (idle, *key)
        keyed.append(dataclasses.replace(n, key=key))
    return keyed


def rank_scores(nodes: Sequence[OracleNode]) -> list[float]:
    """The best key scores 100, the next distinct key 90, ... floored at 0."""
    distinct = sorted({n.key for n in nodes})
    return [max(100.0 - 10.0 * distinct.index(n.key), 0.0) for n in nodes]
