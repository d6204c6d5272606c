"""A pure-Python reference for the placement core: one node at a time, one GPU at a time.

Written from the *definitions* (the docstrings of ``fit``, ``assign``, ``frag`` and the
scorers, and the FGD paper/simulator for fragmentation), not from the vectorized code: no
lookup tables, no bitmask tricks, no numpy. The differential tests compare the kernels with it
on random clusters, and the benchmark measures the speed-up of the kernels over it. It is slow
on purpose and must stay obviously correct; never use it on a hot path.

What it reads from a snapshot: per-GPU numbers element by element, and the node's own
description (``NodeInfo``) for static MIG layouts and GPU UUIDs. Type acceptance and
protection are decided here from the ``GpuRequest`` and the ``ProtectionConfig``, not from the
resolved masks of ``PlacementRequest``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.catalog import Catalog
from extender.config.types import ProtectionConfig
from extender.core.reasons import Reason
from extender.core.scoring.base import MAX_SCORE
from extender.core.workload import Shape
from extender.inventory.snapshot import ClusterSnapshot
from extender.model import Assignment, GpuGrant, GpuRequest, RequestKind
from extender.units import MAX_CPU_MILLI, MAX_GPU_MILLI, MILLI


class NaiveNoFitError(Exception):
    """The request does not fit on the node."""


# -- a node as plain Python values ---------------------------------------------------------


@dataclass
class Gpu:
    slot: int
    index: int
    type_index: int
    total: int
    free: int
    replicas: int
    """Time-slice replicas (0: not time-sliced)."""
    replicas_free: int
    replicas_shared: bool
    """Replicas are nvidia.com/gpu.shared units (else nvidia.com/gpu units)."""
    healthy: bool
    pods: int
    mig: str
    """``"none"``, ``"dynamic"`` or ``"static"``."""
    mig_slots: int
    """Real MIG memory slots of the type (0: the type has no MIG)."""
    used_slots: frozenset[int]
    """Occupied real MIG slots."""
    static: tuple[tuple[str, int], ...]
    """Instances of a static layout (profile, start)."""
    uuid: str | None

    @property
    def partitioned(self) -> bool:
        return self.mig != "none"

    @property
    def time_sliced(self) -> bool:
        return self.replicas > 1


@dataclass
class Node:
    row: int
    name: str
    valid: bool
    cpu_free: int
    memory_free: int
    gpus: list[Gpu]
    """Present GPUs only, in slot order."""


def node_view(snapshot: ClusterSnapshot, row: int) -> Node:
    """Copy one row of the snapshot into plain Python values."""
    catalog = snapshot.catalog
    name = snapshot.node_names[row]
    info = snapshot.nodes.get(name) if name else None
    devices = {gpu.index: gpu for gpu in info.gpus} if info is not None else {}
    gpus = []
    for slot in range(snapshot.n_gpus):
        type_index = int(snapshot.gpu_type[row, slot])
        if type_index < 0:
            continue
        index = int(snapshot.gpu_index[row, slot])
        layout = int(snapshot.mig_layout[row, slot])
        mig = "none" if layout < 0 else ("dynamic" if layout == 0 else "static")
        geometry = catalog.types[type_index].mig if type_index < len(catalog) else None
        slots = geometry.slots if geometry is not None else 0
        used_mask = int(snapshot.mig_used[row, slot])
        used = frozenset(s for s in range(slots) if used_mask >> s & 1)
        device = devices.get(index)
        static: tuple[tuple[str, int], ...] = ()
        if mig == "static" and device is not None and device.mig is not None:
            static = tuple(device.mig.instances)
        gpus.append(Gpu(
            slot=slot, index=index, type_index=type_index,
            total=int(snapshot.total_mib[row, slot]), free=int(snapshot.free_mib[row, slot]),
            replicas=int(snapshot.replicas[row, slot]),
            replicas_free=int(snapshot.replicas_free[row, slot]),
            replicas_shared=bool(device.replicas_shared) if device is not None else False,
            healthy=bool(snapshot.healthy[row, slot]), pods=int(snapshot.pods[row, slot]),
            mig=mig, mig_slots=slots, used_slots=used, static=static,
            uuid=device.uuid if device is not None else None))
    return Node(row=row, name=name, valid=bool(snapshot.node_valid[row]),
                cpu_free=int(snapshot.cpu_free[row]),
                memory_free=int(snapshot.memory_free[row]), gpus=gpus)


# -- results -------------------------------------------------------------------------------


@dataclass
class NodeFit:
    code: int
    params: tuple[int, int, int]
    """The message's numbers: (have, among, need), as ``core.reasons.Numbers``."""
    units: list[int]
    """Per GPU slot (``n_gpus`` entries, padding 0): units the GPU can host now."""

    @property
    def fits(self) -> bool:
        return self.code == Reason.FITS


@dataclass
class NodeScore:
    row: int
    score: float
    choice: int
    """GPU slot the strategy picked (-1: default rules)."""
    delta: float = 0.0
    """FGD: F_after - F_before in GPUs."""
    near_best: tuple[int, ...] = ()
    """FGD shares: every slot whose F_after is within float noise of the best."""


class NaiveReference:
    """Per-node, per-GPU reference of fit, fragmentation, scores and assign."""

    def __init__(self, catalog: Catalog, protection: ProtectionConfig) -> None:
        self.catalog = catalog
        self.protection = protection

    # -- types and protection ------------------------------------------------------------

    def _names(self, names: Sequence[str]) -> set[int]:
        out: set[int] = set()
        for name in names:
            if name == "*":
                out |= set(range(len(self.catalog)))
            else:
                out |= set(self.catalog.resolve(name) or ())
        return out

    def protected_types(self, namespace: str) -> set[int]:
        """Types an untyped pod of ``namespace`` may not use."""
        if self.protection.protected_types is None:
            protected = {i for i, t in enumerate(self.catalog.types) if t.protected}
        else:
            protected = self._names(self.protection.protected_types)
        protected.add(self.catalog.unknown_index)
        allowance = self.protection.namespaces.get(namespace)
        if allowance is not None:
            protected -= self._names(allowance)
        protected.add(self.catalog.unknown_index)
        return protected

    def accepts(self, request: GpuRequest, type_index: int) -> bool:
        if type_index in request.excluded:
            return False
        if request.types is None:
            return type_index != self.catalog.unknown_index
        return type_index in request.types

    def allows(self, request: GpuRequest, namespace: str, type_index: int) -> bool:
        if not self.accepts(request, type_index):
            return False
        if request.types is not None:
            return True  # a typed pod may use the protected types it names
        return type_index not in self.protected_types(namespace)

    # -- MIG -------------------------------------------------------------------------------

    def legal_starts(self, gpu: Gpu, profile: str) -> list[int]:
        """Where an instance of ``profile`` may start on ``gpu`` (empty: not at all)."""
        if not gpu.partitioned:
            return []
        geometry = self.catalog.mig_profile(gpu.type_index, profile)
        if geometry is None:
            return []
        if gpu.mig == "dynamic":
            return sorted(s for s in geometry.starts if s + geometry.slices <= gpu.mig_slots)
        return sorted({start for name, start in gpu.static
                       if name == profile and start in geometry.starts
                       and start + geometry.slices <= gpu.mig_slots})

    def _slices(self, gpu: Gpu, profile: str) -> int:
        geometry = self.catalog.mig_profile(gpu.type_index, profile)
        return geometry.slices if geometry is not None else 0

    def free_placements(self, gpu: Gpu, profile: str, used: frozenset[int]) -> list[int]:
        """Legal starts whose slots are all free in ``used``."""
        slices = self._slices(gpu, profile)
        return [s for s in self.legal_starts(gpu, profile)
                if all(slot not in used for slot in range(s, s + slices))]

    def max_instances(self, gpu: Gpu, profile: str, used: frozenset[int]) -> int:
        """How many instances of ``profile`` fit at once on the free slots (exhaustive)."""
        slices = self._slices(gpu, profile)
        starts = self.free_placements(gpu, profile, used)
        best = 0

        def search(i: int, taken: frozenset[int], n: int) -> None:
            nonlocal best
            best = max(best, n)
            for j in range(i, len(starts)):
                span = frozenset(range(starts[j], starts[j] + slices))
                if not span & taken:
                    search(j + 1, taken | span, n + 1)

        search(0, used, 0)
        return best

    # -- fit -------------------------------------------------------------------------------

    def _capable(self, req: GpuRequest, gpu: Gpu) -> int:
        """Units ``gpu`` could host if it were empty."""
        kind = req.kind
        if kind is RequestKind.MIG:
            assert req.mig_profile is not None
            return self.max_instances(gpu, req.mig_profile, frozenset())
        if gpu.partitioned:
            return 0
        if kind is RequestKind.WHOLE:
            return 0 if gpu.time_sliced and gpu.replicas_shared else 1
        if kind is RequestKind.SHARED:
            return 1 if gpu.time_sliced and gpu.replicas_shared else 0
        if kind is RequestKind.VRAM:
            return 1 if gpu.total >= req.vram_mib else 0
        return 1 if gpu.total > 0 else 0  # FRACTION

    def _now(self, req: GpuRequest, gpu: Gpu) -> int:
        """Units ``gpu`` can host in its current state (capability aside)."""
        kind = req.kind
        if kind is RequestKind.MIG:
            assert req.mig_profile is not None
            return self.max_instances(gpu, req.mig_profile, gpu.used_slots)
        if kind is RequestKind.WHOLE:
            if gpu.time_sliced:
                return int(gpu.replicas_free >= 1 and gpu.free >= gpu.total // gpu.replicas)
            return int(gpu.pods == 0 and gpu.free == gpu.total)
        if kind is RequestKind.SHARED:
            return int(gpu.time_sliced and gpu.replicas_free >= 1
                       and gpu.free >= gpu.total // gpu.replicas)
        if kind is RequestKind.VRAM:
            return int(gpu.free >= req.vram_mib)
        return int(gpu.free >= gpu.total * req.milli // 1000)

    def fit_node(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int, *,
                 namespace: str = "", cpu_milli: int = 0, memory_mib: int = 0,
                 check_cpu_memory: bool = False) -> NodeFit:
        node = node_view(snapshot, row)
        kind = req.kind
        need = 1 if kind in (RequestKind.VRAM, RequestKind.FRACTION) else req.count
        # Units are per GPU whatever the node's verdict: what each usable GPU hosts now.
        units = [0] * snapshot.n_gpus
        dra = kind is not RequestKind.WHOLE and bool(snapshot.node_dra.shape[0]) and \
            bool(snapshot.node_dra[row])
        for gpu in node.gpus if not dra else ():
            if self.allows(req, namespace, gpu.type_index) and gpu.healthy and \
                    self._capable(req, gpu) > 0:
                units[gpu.slot] = self._now(req, gpu)

        def fail(reason: Reason, *, have: int = 0, among: int = 0, need: int = 0) -> NodeFit:
            return NodeFit(int(reason), (have, among, need), units)

        if not node.valid:
            return fail(Reason.UNKNOWN_NODE)
        if not node.gpus:
            return fail(Reason.NO_GPUS)
        accepted = [g for g in node.gpus if self.accepts(req, g.type_index)]
        if not accepted:
            types = [g.type_index for g in node.gpus]
            return fail(Reason.TYPE_MISMATCH, have=min(types), among=max(types))
        allowed = [g for g in accepted if self.allows(req, namespace, g.type_index)]
        if not allowed:
            types = [g.type_index for g in accepted]
            return fail(Reason.PROTECTED, have=min(types), among=max(types))
        if dra:  # claims hold a DRA-managed node's GPUs: only whole GPUs go there
            return fail(Reason.DRA_MANAGED)
        if kind is not RequestKind.MIG and all(g.partitioned for g in allowed):
            return fail(Reason.MIG_PARTITIONED, have=len(allowed))

        capacity = sum(self._capable(req, g) for g in allowed)
        if capacity < need:
            if kind is RequestKind.WHOLE or kind is RequestKind.FRACTION:
                return fail(Reason.TOO_FEW_GPUS, have=capacity, need=need)
            if kind is RequestKind.SHARED:
                return fail(Reason.NOT_TIME_SLICED, have=capacity, need=need)
            if kind is RequestKind.VRAM:
                largest = max([g.total for g in allowed if not g.partitioned], default=0)
                return fail(Reason.TOO_LITTLE_VRAM, have=largest, need=req.vram_mib)
            if capacity == 0:
                return fail(Reason.NO_MIG_PROFILE)
            return fail(Reason.TOO_FEW_MIG_INSTANCES, have=capacity, need=need)
        healthy = [g for g in allowed if g.healthy]
        if sum(self._capable(req, g) for g in healthy) < need:
            return fail(Reason.UNHEALTHY, have=len(allowed) - len(healthy), among=len(healthy),
                        need=need)
        if check_cpu_memory:
            if node.cpu_free < cpu_milli:
                return fail(Reason.CPU_BUSY, have=node.cpu_free, need=cpu_milli)
            if node.memory_free < memory_mib:
                return fail(Reason.MEMORY_BUSY, have=node.memory_free, need=memory_mib)

        candidates = [g for g in healthy if self._capable(req, g) > 0]
        available = sum(units)
        if available < need:
            n = len(candidates)
            if kind is RequestKind.WHOLE:
                return fail(Reason.GPUS_BUSY, have=n - available, among=n, need=need)
            if kind is RequestKind.SHARED:
                return fail(Reason.REPLICAS_BUSY, have=available, among=n, need=need)
            if kind is RequestKind.VRAM:
                best = max(g.free for g in candidates) if candidates else 0
                return fail(Reason.VRAM_BUSY, have=max(best, 0), among=n, need=req.vram_mib)
            if kind is RequestKind.FRACTION:
                best = max(g.free * 1000 // max(g.total, 1) for g in candidates) \
                    if candidates else 0
                return fail(Reason.FRACTION_BUSY, have=max(best, 0), among=n, need=req.milli)
            return fail(Reason.MIG_BUSY, have=available, need=need)
        return NodeFit(int(Reason.FITS), (0, 0, 0), units)

    # -- FGD fragmentation -----------------------------------------------------------------

    @staticmethod
    def in_model(gpu: Gpu) -> bool:
        """FGD's model covers healthy, unpartitioned, not time-sliced GPUs."""
        return gpu.healthy and not gpu.partitioned and not gpu.time_sliced

    @staticmethod
    def free_milli(gpu: Gpu) -> int:
        """Free thousandths of a GPU, 0..1000."""
        return min(max(gpu.free, 0) * MILLI // max(gpu.total, 1), MILLI)

    def demand(self, shape: Shape, type_index: int) -> int:
        """Thousandths of one GPU of ``type_index`` each GPU of ``shape`` needs."""
        if shape.vram_mib > 0:
            memory = max(self.catalog.types[type_index].memory_mib, 1) \
                if type_index < len(self.catalog) else 1
            return -(-shape.vram_mib * MILLI // memory)  # ceiling
        return shape.milli

    def shape_accepts(self, shape: Shape, type_index: int) -> bool:
        if shape.types is None:
            return type_index != self.catalog.unknown_index
        return type_index in shape.types

    def frag_of(self, xs: Sequence[tuple[int, int]], cpu_free: int,
                shapes: Mapping[Shape, float]) -> float:
        """F (thousandths) of a node whose in-model GPUs are ``(type, free milli)`` pairs.

        Per shape m (weight p): if m is CPU-only, or the node lacks the CPU, or fewer than
        m.gpus GPUs are of an accepted type with free >= m's demand, every free thousandth is
        a fragment; otherwise the free thousandths of the GPUs m cannot use are.
        """
        total = 0.0
        idle = sum(x for _, x in xs)
        for shape, p in shapes.items():
            if shape.gpus == 0 or cpu_free < shape.cpu_milli:
                total += p * idle
                continue
            usable = [self.shape_accepts(shape, t) and x >= self.demand(shape, t)
                      for t, x in xs]
            if sum(usable) < shape.gpus:
                total += p * idle
            else:
                total += p * sum(x for (_, x), ok in zip(xs, usable, strict=True) if not ok)
        return total

    def node_frag(self, snapshot: ClusterSnapshot, row: int,
                  shapes: Mapping[Shape, float]) -> float:
        node = node_view(snapshot, row)
        xs = [(g.type_index, self.free_milli(g)) for g in node.gpus if self.in_model(g)]
        return self.frag_of(xs, node.cpu_free, shapes)

    # -- scores ----------------------------------------------------------------------------

    def _share_held(self, req: GpuRequest, gpu: Gpu) -> int:
        if req.kind is RequestKind.FRACTION:
            return gpu.total * req.milli // 1000
        return req.vram_mib

    def frag_after(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int,
                   shapes: Mapping[Shape, float], *, cpu_milli: int = 0,
                   slots: Sequence[int] = ()) -> float:
        """F (thousandths) of the node once the pod holds its CPU and: a one-GPU share on
        ``slots[0]`` (shares), or ``slots`` taken whole (other kinds; GPUs outside the model
        do not change F)."""
        node = node_view(snapshot, row)
        xs = []
        for g in node.gpus:
            if not self.in_model(g):
                continue
            x = self.free_milli(g)
            if g.slot in slots:
                if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
                    left = max(g.free, 0) - self._share_held(req, g)
                    x = min(max(left, 0) * MILLI // max(g.total, 1), MILLI)
                else:
                    x = 0
            xs.append((g.type_index, x))
        return self.frag_of(xs, node.cpu_free - cpu_milli, shapes)

    def fgd(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int, units: Sequence[int],
            shapes: Mapping[Shape, float], *, cpu_milli: int = 0,
            integer: bool = True) -> NodeScore:
        """FGD on one fitting node; score = 100 * sigmoid((F_before - F_after) / 1000),
        truncated to an integer when ``integer``.

        Shares try every GPU with a unit: with ``integer`` the lowest slot with the best
        truncated score (the simulator's loop), else the GPU with the least F_after. Other
        kinds take the lowest ``count`` GPUs with a unit."""
        before = self.node_frag(snapshot, row, shapes)
        with_unit = [s for s in range(len(units)) if units[s] > 0]
        choice = -1
        near: tuple[int, ...] = ()
        if req.kind in (RequestKind.FRACTION, RequestKind.VRAM):
            afters = [(self.frag_after(snapshot, req, row, shapes, cpu_milli=cpu_milli,
                                       slots=[s]), s) for s in with_unit]
            if integer:
                # the simulator's loop: GPUs in index order, strict ">" on the truncated score
                # (the lowest slot with the best integer score wins)
                raw = [(MAX_SCORE / (1.0 + math.exp((f - before) / MILLI)), f, s)
                       for f, s in afters]
                best_int = max(math.floor(r) for r, _, _ in raw)
                first = next(i for i, (r, _, _) in enumerate(raw)
                             if math.floor(r) >= best_int)
                after, choice = raw[first][1], raw[first][2]
                # slots float noise could make the pick: those at the boundary up to the
                # first one that is surely the best
                eps = 1e-6
                surely = next((i for i, (r, _, _) in enumerate(raw)
                               if math.floor(r - eps) >= best_int), len(raw) - 1)
                near = tuple(s for i, (r, _, s) in enumerate(raw)
                             if i <= surely and math.floor(r + eps) >= best_int)
            else:
                after, choice = min(afters)
                near = tuple(s for f, s in afters
                             if f - after <= 1e-6 * max(1.0, abs(after)))
        else:
            after = self.frag_after(snapshot, req, row, shapes, cpu_milli=cpu_milli,
                                    slots=with_unit[: req.count])
        delta = (after - before) / MILLI
        score = MAX_SCORE / (1.0 + math.exp(delta))  # 100 * sigmoid(-delta)
        if integer:
            score = math.floor(score)
        return NodeScore(row, score, choice, delta, near)

    def used_fraction(self, gpu: Gpu) -> float:
        """Share of the GPU pods hold: slots (MIG), max of replicas and VRAM (time-sliced),
        VRAM otherwise."""
        vram = 1.0 - max(gpu.free, 0) / max(gpu.total, 1)
        if gpu.partitioned:
            return len(gpu.used_slots) / gpu.mig_slots if gpu.mig_slots else 0.0
        if gpu.replicas > 0:
            return max(1.0 - gpu.replicas_free / gpu.replicas, vram)
        return vram

    def take_fraction(self, req: GpuRequest, gpu: Gpu) -> float:
        """Share of the GPU one unit of the request takes."""
        if req.kind is RequestKind.VRAM:
            return req.vram_mib / max(gpu.total, 1)
        if req.kind is RequestKind.FRACTION:
            return req.milli / 1000.0
        if req.kind is RequestKind.MIG:
            assert req.mig_profile is not None
            if not gpu.partitioned:
                return 0.0
            return self._slices(gpu, req.mig_profile) / max(gpu.mig_slots, 1)
        return 1.0 / gpu.replicas if gpu.replicas > 0 else 1.0

    def _requested(self, node: Node, req: GpuRequest, units: Sequence[int]) -> float:
        used = sum(self.used_fraction(g) for g in node.gpus)
        takes = [self.take_fraction(req, g) for g in node.gpus if units[g.slot] > 0]
        return used + (min(takes) if takes else 0.0) * req.count

    def least_allocated(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int,
                        units: Sequence[int]) -> float:
        node = node_view(snapshot, row)
        capacity = len(node.gpus)
        if capacity == 0:
            return 0.0
        requested = min(self._requested(node, req, units), capacity)
        return (capacity - requested) * MAX_SCORE / capacity

    def most_allocated(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int,
                       units: Sequence[int]) -> float:
        node = node_view(snapshot, row)
        capacity = len(node.gpus)
        if capacity == 0:
            return 0.0
        return min(self._requested(node, req, units), capacity) * MAX_SCORE / capacity

    def best_fit_raw(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int,
                     units: Sequence[int], cpu_milli: int = 0) -> float:
        """BestFit before normalisation: 100 * (1 - s)."""
        node = node_view(snapshot, row)
        gpu_free = sum(1.0 - self.used_fraction(g) for g in node.gpus) * 1000
        takes = [self.take_fraction(req, g) for g in node.gpus if units[g.slot] > 0]
        gpu_req = (min(takes) if takes else 0.0) * req.count * 1000
        s = 0.5 * (node.cpu_free - cpu_milli) / MAX_CPU_MILLI + \
            0.5 * (gpu_free - gpu_req) / MAX_GPU_MILLI
        return MAX_SCORE * (1.0 - s)

    @staticmethod
    def min_max(raw: Sequence[float]) -> list[float]:
        if not raw:
            return []
        low, high = min(raw), max(raw)
        if high - low < 1e-12:
            return [MAX_SCORE] * len(raw)
        return [(v - low) * MAX_SCORE / (high - low) for v in raw]

    def cost(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int,
             units: Sequence[int], choice: int) -> float:
        """USD/h of what the pod takes: price x share, over the GPU(s) it would take (the
        chosen one, else the lowest ``count`` with a unit)."""
        node = node_view(snapshot, row)
        if choice >= 0:
            taken = [g for g in node.gpus if g.slot == choice]
        else:
            taken = [g for g in node.gpus if units[g.slot] > 0][: req.count]
        return sum(self.catalog.types[g.type_index].price * self.take_fraction(req, g)
                   if g.type_index < len(self.catalog) else 0.0 for g in taken)

    # -- assign ----------------------------------------------------------------------------

    def assign(self, snapshot: ClusterSnapshot, req: GpuRequest, row: int, *,
               namespace: str = "", order: Sequence[int] | None = None) -> Assignment:
        """The GPU(s) on the node, by the rules of ``extender.core.assign``."""
        result = self.fit_node(snapshot, req, row, namespace=namespace)
        if not result.fits:
            raise NaiveNoFitError(f"reason {Reason(result.code).name}")
        node = node_view(snapshot, row)
        candidates = [g for g in node.gpus if result.units[g.slot] > 0]
        kind = req.kind
        if order is not None:
            rank = {slot: i for i, slot in enumerate(order)}
            candidates.sort(key=lambda g: (rank.get(g.slot, len(rank) + g.slot)))
        elif kind is RequestKind.VRAM:
            candidates.sort(key=lambda g: (g.free, g.slot))  # least free VRAM that covers it
        elif kind is RequestKind.FRACTION:
            candidates.sort(key=lambda g: (g.free * 1000 // max(g.total, 1), g.free, g.slot))
        elif kind in (RequestKind.WHOLE, RequestKind.SHARED):
            sliced = sorted((g for g in candidates if g.time_sliced),
                            key=lambda g: (g.replicas_free, g.slot))
            plain = sorted((g for g in candidates if not g.time_sliced), key=lambda g: g.slot)
            candidates = sliced + plain
        grants: list[GpuGrant] = []
        if kind is RequestKind.MIG:
            grants = self._assign_mig(req, candidates, keep_order=order is not None)
        else:
            for gpu in candidates[: 1 if kind in (RequestKind.VRAM, RequestKind.FRACTION)
                                  else req.count]:
                if kind is RequestKind.VRAM:
                    grants.append(GpuGrant(gpu.index, req.vram_mib, uuid=gpu.uuid))
                elif kind is RequestKind.FRACTION:
                    grants.append(GpuGrant(gpu.index, gpu.total * req.milli // 1000,
                                           uuid=gpu.uuid))
                elif gpu.time_sliced:
                    grants.append(GpuGrant(gpu.index, gpu.total // gpu.replicas, replica=True,
                                           uuid=gpu.uuid))
                else:
                    grants.append(GpuGrant(gpu.index, gpu.total, whole=True, uuid=gpu.uuid))
        first = next(g for g in node.gpus if g.index == grants[0].index)
        return Assignment(node=node.name, kind=kind, grants=tuple(grants),
                          type_id=self.catalog.id_of(first.type_index),
                          generation=snapshot.generation)

    def _assign_mig(self, req: GpuRequest, candidates: list[Gpu], *,
                    keep_order: bool) -> list[GpuGrant]:
        profile = req.mig_profile
        assert profile is not None
        used = {g.slot: set(g.used_slots) for g in candidates}
        grants = []
        for _ in range(req.count):
            if not keep_order:  # fewest free slots first: fill GPUs one by one
                candidates.sort(key=lambda g: (g.mig_slots - len(used[g.slot]), g.slot))
            for gpu in candidates:
                starts = self.free_placements(gpu, profile, frozenset(used[gpu.slot]))
                if not starts:
                    continue
                slices = self._slices(gpu, profile)
                start = self.best_mig_start(gpu.type_index, frozenset(used[gpu.slot]),
                                            starts, slices)
                used[gpu.slot] |= set(range(start, start + slices))
                geometry = self.catalog.mig_profile(gpu.type_index, profile)
                assert geometry is not None
                grants.append(GpuGrant(gpu.index, geometry.memory_mib, mig_profile=profile,
                                       mig_start=start, mig_slices=slices, uuid=gpu.uuid))
                break
            else:
                raise NaiveNoFitError("MIG placements ran out")
        return grants

    def best_mig_start(self, type_index: int, used: frozenset[int], starts: Sequence[int],
                       slices: int) -> int:
        """Among free legal ``starts``, the one after which the type's profiles, largest
        first, keep the most free placements (compared in that order); ties: highest start."""
        mig = self.catalog.types[type_index].mig
        assert mig is not None
        profiles = sorted(mig.profiles, key=lambda p: (-p.slices, p.name))
        best: tuple[tuple[int, ...], int] | None = None
        for start in starts:
            after = used | set(range(start, start + slices))
            quality = tuple(
                sum(1 for s in p.starts if s + p.slices <= mig.slots
                    and all(slot not in after for slot in range(s, s + p.slices)))
                for p in profiles)
            if best is None or (quality, start) > best:
                best = (quality, start)
        assert best is not None
        return best[1]
