"""Small builders for the core and inventory tests: GPUs, nodes, inventories, requests, and
seeded random clusters for the differential and property tests.

Snapshots are built straight from ``NodeInfo`` / ``GpuDevice`` values (no Pod/Node JSON): the
core never sees JSON, and this keeps each table row one readable line.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import zlib
from collections.abc import Iterable, Sequence

import numpy as np

from extender.catalog import Catalog
from extender.config.types import ProtectionConfig
from extender.core.assign import NoFitError, assign
from extender.core.fit import fit
from extender.core.request import PlacementRequest, Protection, resolve_request
from extender.core.workload import Shape
from extender.inventory import Holding, Inventory
from extender.model import (
    Assignment,
    DraDeviceRef,
    GpuDevice,
    GpuRequest,
    MigLayout,
    NodeInfo,
    PodKey,
    RequestKind,
)
from extender.platform import Platform, load_platform
from tests.reference.naive import NaiveReference

PROTECTION = ProtectionConfig(protected_types=None,
                              namespaces={"research": ("a100",), "platform": ("*",)})
"""The catalog's protected flags; ``research`` may use the A100s, ``platform`` everything."""


@functools.cache
def platform() -> Platform:
    return load_platform()


def catalog() -> Catalog:
    return platform().catalog


@functools.cache
def protection() -> Protection:
    return Protection(PROTECTION, catalog())


@functools.cache
def reference() -> NaiveReference:
    return NaiveReference(catalog(), PROTECTION)


def t(type_id: str) -> int:
    """Catalog index of a canonical id."""
    return catalog().index_of(type_id)


def gpu(type_id: str, index: int, *, memory: int | None = None, replicas: int = 0,
        shared: bool = False, mig: str | tuple[tuple[str, int], ...] | None = None,
        healthy: bool = True) -> GpuDevice:
    """One GPU; ``mig="dynamic"`` or a tuple of (profile, start) for a static layout;
    ``shared``: its replicas are nvidia.com/gpu.shared units (else nvidia.com/gpu units)."""
    cat = catalog()
    type_index = cat.unknown_index if type_id == "unknown" else cat.index_of(type_id)
    if memory is None:
        memory = int(cat.memory_mib[type_index]) or 16384
    layout = None
    if mig == "dynamic":
        layout = MigLayout(dynamic=True)
    elif mig is not None:
        layout = MigLayout(dynamic=False, instances=tuple(mig))
    return GpuDevice(index=index, type_index=type_index, memory_mib=memory,
                     uuid=f"GPU-{type_id}-{index}", replicas=replicas,
                     replicas_shared=shared, mig=layout, healthy=healthy)


def node(name: str, type_id: str = "t4", count: int = 1, *, cpu: int = 64_000,
         memory: int = 256_000, gpus: Sequence[GpuDevice] | None = None, **gpu_kw: object
         ) -> NodeInfo:
    """A node with ``count`` identical GPUs (or the explicit ``gpus``)."""
    if gpus is None:
        gpus = [gpu(type_id, i, **gpu_kw) for i in range(count)]  # type: ignore[arg-type]
    return NodeInfo(name=name, gpus=tuple(gpus), cpu_milli=cpu, memory_mib=memory,
                    type_name=type_id)


def inventory(*nodes: NodeInfo, clock: object = None) -> Inventory:
    inv = Inventory(catalog()) if clock is None else Inventory(catalog(), clock=clock)  # type: ignore[arg-type]
    for info in nodes:
        inv.upsert_node(info)
    return inv


def request(kind: RequestKind | str, count: int = 1, *, vram: int = 0, milli: int = 0,
            mig: str | None = None, types: Iterable[str] | None = None,
            excluded: Iterable[str] = ()) -> GpuRequest:
    """A ``GpuRequest``; ``types``/``excluded`` are ids or family names."""
    cat = catalog()

    def resolve(names: Iterable[str]) -> frozenset[int]:
        out: set[int] = set()
        for name in names:
            found = cat.resolve(name)
            assert found, name
            out |= found
        return frozenset(out)

    return GpuRequest(kind=RequestKind(kind), count=count, vram_mib=vram, milli=milli,
                      mig_profile=mig, types=None if types is None else resolve(types),
                      excluded=resolve(excluded))


def placement(req: GpuRequest, namespace: str = "", cpu: int = 0,
              memory: int = 0) -> PlacementRequest:
    return resolve_request(req, catalog(), protection(), namespace=namespace, cpu_milli=cpu,
                           memory_mib=memory)


_uids = itertools.count()


def place(inv: Inventory, req: GpuRequest, node_name: str, *, namespace: str = "platform",
          cpu: int = 0) -> Assignment:
    """Assign ``req`` on ``node_name`` with the core and reserve it (no TTL)."""
    snap = inv.snapshot()
    row = snap.node_index[node_name]
    assignment = assign(snap, placement(req, namespace, cpu), row)
    uid = f"uid-{next(_uids)}"
    inv.assume(PodKey("default", uid, uid), assignment, cpu_milli=cpu)
    return assignment


# -- seeded random clusters --------------------------------------------------------------------

NAMESPACES = ("", "default", "research", "platform")


def mig_types() -> list[int]:
    return [i for i, accel in enumerate(catalog().types) if accel.mig is not None]


def random_static_layout(rng: np.random.Generator, type_index: int
                         ) -> tuple[tuple[str, int], ...]:
    """A legal static layout (non-overlapping instances at legal starts), sometimes with one
    illegal extra instance that the inventory must ignore."""
    cat = catalog()
    mig = cat.types[type_index].mig
    assert mig is not None
    used: set[int] = set()
    instances: list[tuple[str, int]] = []
    for _ in range(int(rng.integers(1, 6))):
        profile = mig.profiles[int(rng.integers(len(mig.profiles)))]
        free = [s for s in profile.starts
                if not used & set(range(s, s + profile.slices))]
        if not free:
            continue
        start = free[int(rng.integers(len(free)))]
        used |= set(range(start, start + profile.slices))
        instances.append((profile.name, start))
    if rng.random() < 0.3:
        name = cat.mig.names[int(rng.integers(len(cat.mig.names)))]
        start = int(rng.integers(0, 8))
        profile = mig.profile(name)
        if profile is None or start not in profile.starts:
            instances.append((name, start))  # illegal on this type: ignored
    return tuple(instances)


def random_gpu(rng: np.random.Generator, type_index: int, index: int) -> GpuDevice:
    cat = catalog()
    accel = cat.types[type_index] if type_index < len(cat) else None
    memory = accel.memory_mib if accel is not None else int(rng.choice([16384, 32768]))
    if rng.random() < 0.1:
        memory -= int(rng.integers(1, 2048))  # the node reports a little less than the catalog
    replicas = 0
    layout = None
    roll = rng.random()
    if accel is not None and accel.mig is not None and roll < 0.45:
        layout = MigLayout(dynamic=True) if rng.random() < 0.5 else \
            MigLayout(dynamic=False, instances=random_static_layout(rng, type_index))
    elif roll > 0.8:
        replicas = int(rng.choice([2, 3, 4, 8]))
        if rng.random() < 0.5:
            memory -= 1  # replicas hold total // replicas: a few MiB stay free when all are used
    return GpuDevice(index=index, type_index=type_index, memory_mib=memory,
                     uuid=f"GPU-{index}-{int(rng.integers(1 << 30))}", replicas=replicas,
                     replicas_shared=bool(replicas and rng.random() < 0.5), mig=layout,
                     healthy=bool(rng.random() > 0.08))


def random_node(rng: np.random.Generator, name: str) -> NodeInfo:
    cat = catalog()
    n_types = len(cat) + 1  # the last is "unknown"
    count = int(rng.choice([0, 1, 2, 2, 4, 4, 8, 8, 8, 16]))
    main = int(rng.integers(n_types)) if rng.random() > 0.05 else cat.unknown_index
    if rng.random() < 0.3:
        main = int(rng.choice(mig_types()))
    other = int(rng.integers(len(cat)))
    mixed = rng.random() < 0.15
    indices = sorted(rng.choice(64, size=count, replace=False).tolist()) \
        if rng.random() < 0.2 else list(range(count))
    gpus = [random_gpu(rng, other if mixed and rng.random() < 0.5 else main, int(i))
            for i in indices]
    cpu, memory = int(rng.integers(0, 128)) * 1000, int(rng.integers(0, 512)) * 1024
    refs: tuple[DraDeviceRef, ...] = ()
    # About one node in 12 is DRA-managed (plain GPUs published as DRA devices); decided by
    # the name, not the generator, so the other draws stay what they were
    if gpus and zlib.crc32(name.encode()) % 12 == 0:
        gpus = [GpuDevice(g.index, g.type_index, g.memory_mib, healthy=g.healthy,
                          dra_device=f"gpu-{g.index}") for g in gpus]
        refs = tuple(DraDeviceRef(g.dra_device, g.index, "gpu", g.memory_mib) for g in gpus)
    return NodeInfo(name=name, gpus=tuple(gpus), cpu_milli=cpu, memory_mib=memory,
                    type_name="random", dra_devices=refs)


def random_request(rng: np.random.Generator) -> tuple[GpuRequest, str, int]:
    """A request of any kind, typed/untyped/excluded, with a namespace and a CPU request."""
    cat = catalog()
    kind = RequestKind(str(rng.choice([k.value for k in RequestKind])))
    count = int(rng.choice([1, 1, 1, 2, 3, 4, 8]))
    vram = milli = 0
    profile = None
    if kind is RequestKind.VRAM:
        vram = int(rng.choice([1024, 4096, 8192, 15000, 16384, 20000, 40960, 81920, 100000]))
        count = 1
    elif kind is RequestKind.FRACTION:
        milli = int(rng.choice([50, 250, 470, 500, 810, 999]))
        count = 1
    elif kind is RequestKind.MIG:
        profile = cat.mig.names[int(rng.integers(len(cat.mig.names)))]
        count = int(rng.choice([1, 1, 2, 3, 7]))
    elif kind is RequestKind.SHARED:
        count = int(rng.choice([1, 1, 2, 3]))
    types: frozenset[int] | None = None
    roll = rng.random()
    if roll < 0.4:
        size = int(rng.integers(1, 5))
        types = frozenset(int(i) for i in rng.choice(len(cat), size=size, replace=False))
        if profile is not None and rng.random() < 0.7:
            types = types | cat.types_with_mig_profile(profile)
    excluded: frozenset[int] = frozenset()
    if rng.random() < 0.2:
        excluded = frozenset(int(i) for i in rng.choice(len(cat), size=2, replace=False))
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    cpu = int(rng.choice([0, 0, 1000, 8000, 32000, 100000]))
    return GpuRequest(kind=kind, count=count, vram_mib=vram, milli=milli, mig_profile=profile,
                      types=types, excluded=excluded), namespace, cpu


def random_shapes(rng: np.random.Generator) -> dict[Shape, float]:
    """A typical-shape mix: CPU-only, shares, whole and multi-GPU (some by VRAM), some typed."""
    cat = catalog()
    shapes: dict[Shape, float] = {}
    for _ in range(int(rng.integers(1, 9))):
        gpus = int(rng.choice([0, 1, 1, 1, 2, 4, 8]))
        cpu = int(rng.choice([0, 1000, 4000, 16000, 64000]))
        types = None
        if rng.random() < 0.3:
            types = frozenset(int(i) for i in rng.choice(len(cat), size=3, replace=False))
        if gpus == 0:
            shape = Shape(0, 0, 0, cpu, None)
        elif rng.random() < 0.25:
            shape = Shape(gpus, 0, int(rng.choice([4096, 12000, 16384, 30000])), cpu, types)
        else:
            milli = 1000 if gpus > 1 else int(rng.choice([100, 250, 470, 500, 1000]))
            shape = Shape(gpus, milli, 0, cpu, types)
        shapes[shape] = shapes.get(shape, 0.0) + float(rng.random()) + 0.05
    total = sum(shapes.values())
    return {shape: weight / total for shape, weight in shapes.items()}


def random_holdings(rng: np.random.Generator, inv: Inventory, attempts: int) -> int:
    """Fill the cluster at random: each attempt picks a node and a request, and if it fits,
    the core assigns it and the inventory reserves (or observes) it. Returns pods placed."""
    names = inv.node_names()
    placed = 0
    if not names:
        return 0
    for _ in range(attempts):
        name = names[int(rng.integers(len(names)))]
        req, _, _ = random_request(rng)
        req = GpuRequest(kind=req.kind, count=req.count, vram_mib=req.vram_mib, milli=req.milli,
                         mig_profile=req.mig_profile)  # untyped; namespace platform: anything
        snap = inv.snapshot()
        row = snap.node_index[name]
        preq = placement(req, "platform")
        if not fit(snap, preq, np.array([row], dtype=np.int64)).fits[0]:
            continue
        try:
            assignment = assign(snap, preq, row)
        except NoFitError:  # pragma: no cover - fit said it fits
            continue
        uid = f"prior-{next(_uids)}"
        key = PodKey("default", uid, uid)
        cpu = int(rng.integers(0, 16)) * 1000
        if rng.random() < 0.5:
            inv.assume(key, assignment, cpu_milli=cpu, ttl=30.0)
            if rng.random() < 0.5:
                inv.finish_binding(uid)
        else:
            inv.observe(Holding(key, name, assignment, cpu_milli=cpu))
        placed += 1
    return placed


def random_cluster(rng: np.random.Generator, n_nodes: int, *, fill: float = 3.0,
                   holes: int = 2) -> Inventory:
    """``n_nodes`` random nodes, ``fill`` x ``n_nodes`` placement attempts, then ``holes``
    nodes removed (their rows stay as holes)."""
    inv = inventory()
    for i in range(n_nodes):
        inv.upsert_node(random_node(rng, f"node-{i:03d}"))
    random_holdings(rng, inv, int(fill * n_nodes))
    names = inv.node_names()
    for i in rng.choice(len(names), size=min(holes, len(names)), replace=False):
        inv.remove_node(names[int(i)])
    return inv


def random_change(rng: np.random.Generator, inv: Inventory, step: int) -> None:
    """Change the cluster the ways the inventory changes, in turn by ``step``: pods placed,
    pods removed, a node added and one replaced, a node removed (its row stays as a hole)."""
    change = step % 4
    if change == 0:
        random_holdings(rng, inv, 6)  # pods placed: a few rows change
    elif change == 1:
        for holding in list(inv.holdings())[:3]:
            inv.remove_pod(holding.key.uid)
    elif change == 2:
        inv.upsert_node(random_node(rng, f"new-{step}"))  # a row added
        names = inv.node_names()
        inv.upsert_node(random_node(rng, names[int(rng.integers(len(names)))]))
    else:
        names = inv.node_names()
        inv.remove_node(names[int(rng.integers(len(names)))])  # a hole


def pooled_cluster(rng: np.random.Generator, pools: int, per_pool: int) -> Inventory:
    """``pools`` random node templates, each ``per_pool`` nodes that differ only by name (a
    cloud node pool): rows whose contents repeat, which the per-row caches look up by
    content. No pods yet."""
    inv = inventory()
    for p in range(pools):
        template = random_node(rng, f"template-{p}")
        for i in range(per_pool):
            name = f"pool-{p}-{i}"
            inv.upsert_node(dataclasses.replace(template, name=name))
    return inv
