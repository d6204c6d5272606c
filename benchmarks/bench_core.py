"""Benchmark of the placement core: fit + score + assign for one pod on a synthetic cluster.

    .venv/bin/python benchmarks/bench_core.py                 # 1,000 / 5,000 / 10,000 nodes
    .venv/bin/python benchmarks/bench_core.py --sizes 1000 --reps 5 --naive-reps 1   # quick

What one "pod" costs (the timed region, per strategy, on the same snapshot):

    resolve_request -> fit(all valid rows) -> strategy.score(fitting rows) -> pick the best
    node -> assign(that node, the strategy's GPU choice)

Clusters: ``N`` nodes x 8 GPUs, mixed types (T4, L4, A10G, L40S, V100-32GB, A100-80GB, H100,
A30), some A100/A30 MIG-partitioned (dynamic and static layouts), some L4 time-sliced, about
half the capacity held by random prior pods applied through ``Inventory.observe``; fixed seed.
The FGD model is built from an openb-like typical-shape mix.

"Warm" figures: the ``FragModel`` tables exist (built once per shape mix); nothing else is
cached between pods, every call does the full work on every candidate row. "Cold": building
the ``FragModel`` (once per mix change). Also reported: what the service pays after each
reservation to take the next snapshot (copy-on-write of the arrays), outside the timed region.

The naive reference (``tests.reference.naive``) runs the same pods on the same snapshot with its
own fit, score and assign; speed-ups are measured in the same run. Single thread: BLAS/OpenMP
pools are set to 1 thread before numpy is imported (the kernels are element-wise anyway).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform as host  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from extender.catalog import Catalog  # noqa: E402
from extender.config.types import ProtectionConfig  # noqa: E402
from extender.core.assign import assign  # noqa: E402
from extender.core.fit import fit  # noqa: E402
from extender.core.fragmentation.model import FragModel  # noqa: E402
from extender.core.request import Protection, resolve_request  # noqa: E402
from extender.core.scoring.base import Strategy, StrategyContext  # noqa: E402
from extender.core.scoring.registry import make_strategy  # noqa: E402
from extender.core.workload import Shape  # noqa: E402
from extender.inventory import ClusterSnapshot, Holding, Inventory  # noqa: E402
from extender.model import (  # noqa: E402
    Assignment,
    GpuDevice,
    GpuGrant,
    GpuRequest,
    MigLayout,
    NodeInfo,
    PodKey,
    RequestKind,
)
from extender.platform import load_platform  # noqa: E402
from tests.reference.naive import NaiveReference  # noqa: E402

STRATEGIES = ("cost-fragmentation", "fgd", "best-fit", "least-allocated")
NAIVE_OF = {"cost-fragmentation": "fgd", "fgd": "fgd", "best-fit": "best-fit",
            "least-allocated": "least-allocated"}
"""The naive scorer each strategy is compared with (the default has no naive twin: its work is
FGD's dF per GPU plus a price lookup, so it is compared with naive FGD)."""

SHAPES = {
    Shape(0, 0, 0, 4000): 0.10,
    Shape(1, 1000, 0, 8000): 0.35,
    Shape(1, 810, 0, 8000): 0.10,
    Shape(1, 470, 0, 6000): 0.10,
    Shape(1, 320, 0, 4000): 0.08,
    Shape(1, 0, 8192, 4000): 0.07,
    Shape(2, 1000, 0, 16000): 0.08,
    Shape(4, 1000, 0, 32000): 0.07,
    Shape(8, 1000, 0, 64000): 0.05,
}
"""An openb-like typical mix (CPU-only, whole, shares, a VRAM share, multi-GPU)."""

NODE_MIX = (("t4", 0.30), ("l4", 0.15), ("a10g", 0.10), ("l40s", 0.05), ("v100-32gb", 0.10),
            ("a100-80gb", 0.15), ("h100-80gb", 0.05), ("a30", 0.10))


@dataclass(frozen=True)
class PodCase:
    name: str
    request: GpuRequest
    namespace: str = ""
    cpu_milli: int = 4000


def pod_cases(catalog: Catalog) -> list[PodCase]:
    a100 = frozenset({catalog.index_of("a100-80gb")})
    t4 = frozenset({catalog.index_of("t4")})
    return [
        PodCase("typed whole (t4 x1)", GpuRequest(RequestKind.WHOLE, 1, types=t4)),
        PodCase("untyped whole x1", GpuRequest(RequestKind.WHOLE, 1)),
        PodCase("mig 1g.10gb (a100)", GpuRequest(RequestKind.MIG, 1, mig_profile="1g.10gb",
                                                 types=a100)),
        PodCase("vram share 8Gi", GpuRequest(RequestKind.VRAM, 1, vram_mib=8192)),
        PodCase("fraction 0.47", GpuRequest(RequestKind.FRACTION, 1, milli=470)),
    ]


# -- synthetic cluster ----------------------------------------------------------------------


def build_cluster(catalog: Catalog, n_nodes: int, seed: int) -> Inventory:
    """``n_nodes`` x 8 GPUs, about half the capacity held by prior pods (observed)."""
    rng = np.random.default_rng(seed)
    inv = Inventory(catalog)
    names = [t for t, _ in NODE_MIX]
    weights = np.array([w for _, w in NODE_MIX])
    picks = rng.choice(len(names), size=n_nodes, p=weights / weights.sum())
    uid = 0
    for i in range(n_nodes):
        type_id = names[int(picks[i])]
        type_index = catalog.index_of(type_id)
        accel = catalog.types[type_index]
        mig_node = accel.mig is not None and rng.random() < 0.6
        sliced = type_id == "l4" and rng.random() < 0.4
        gpus = []
        for g in range(8):
            layout = None
            if mig_node:
                layout = MigLayout(dynamic=True) if rng.random() < 0.7 else MigLayout(
                    dynamic=False, instances=static_layout(accel.mig.profiles, rng))  # type: ignore[union-attr]
            gpus.append(GpuDevice(index=g, type_index=type_index, memory_mib=accel.memory_mib,
                                  uuid=f"GPU-{i}-{g}", replicas=4 if sliced else 0,
                                  replicas_shared=sliced, mig=layout,
                                  healthy=bool(rng.random() > 0.01)))
        info = NodeInfo(name=f"node-{i:05d}", gpus=tuple(gpus), cpu_milli=96_000,
                        memory_mib=393_216, type_name=type_id)
        inv.upsert_node(info)
        for assignment, cpu in prior_pods(catalog, info, rng):
            uid += 1
            inv.observe(Holding(PodKey("bench", f"p{uid}", f"p{uid}"), info.name, assignment,
                                cpu_milli=cpu))
    assert inv.conflicts_total == 0, "the synthetic holdings must be valid"
    return inv


def static_layout(profiles: tuple, rng: np.random.Generator  # type: ignore[type-arg]
                  ) -> tuple[tuple[str, int], ...]:
    used: set[int] = set()
    out = []
    for _ in range(4):
        p = profiles[int(rng.integers(len(profiles)))]
        free = [s for s in p.starts if not used & set(range(s, s + p.slices))]
        if free:
            start = free[int(rng.integers(len(free)))]
            used |= set(range(start, start + p.slices))
            out.append((p.name, start))
    return tuple(out)


def prior_pods(catalog: Catalog, info: NodeInfo, rng: np.random.Generator
               ) -> list[tuple[Assignment, int]]:
    """Valid holdings for a node, GPU by GPU: whole, shares, replicas or MIG instances."""
    out: list[tuple[Assignment, int]] = []
    free_whole = []
    for gpu in info.gpus:
        roll = rng.random()
        if not gpu.healthy:
            continue
        if gpu.mig is not None:
            mig = catalog.types[gpu.type_index].mig
            assert mig is not None
            if gpu.mig.dynamic:
                used: set[int] = set()
                for _ in range(int(rng.integers(0, 5))):
                    p = mig.profiles[int(rng.integers(len(mig.profiles)))]
                    free = [s for s in p.starts if not used & set(range(s, s + p.slices))]
                    if not free:
                        continue
                    s = free[int(rng.integers(len(free)))]
                    used |= set(range(s, s + p.slices))
                    out.append((mig_assignment(info.name, gpu, p.name, start=s, slices=p.slices,
                                               memory=p.memory_mib), 2000))
            else:
                for name, s in gpu.mig.instances:
                    if rng.random() < 0.5:
                        p = mig.profile(name)
                        assert p is not None
                        out.append((mig_assignment(info.name, gpu, name, start=s, slices=p.slices,
                                                   memory=p.memory_mib), 2000))
        elif gpu.replicas > 1:
            for _ in range(int(rng.integers(0, gpu.replicas + 1))):
                grant = GpuGrant(gpu.index, gpu.memory_mib // gpu.replicas, replica=True)
                out.append((Assignment(info.name, RequestKind.SHARED, (grant,)), 2000))
        elif roll < 0.35:
            free_whole.append(gpu)
        elif roll < 0.65:
            left = gpu.memory_mib
            for _ in range(int(rng.integers(1, 4))):
                milli = int(rng.choice([160, 250, 320, 470, 500, 810]))
                mib = gpu.memory_mib * milli // 1000
                if mib > left:
                    break
                left -= mib
                out.append((Assignment(info.name, RequestKind.FRACTION,
                                       (GpuGrant(gpu.index, mib),)), 4000))
    # whole GPUs: in pods of 1, 2 or 4
    while free_whole:
        size = min(len(free_whole), int(rng.choice([1, 1, 2, 4])))
        taken, free_whole = free_whole[:size], free_whole[size:]
        grants = tuple(GpuGrant(g.index, g.memory_mib, whole=True) for g in taken)
        out.append((Assignment(info.name, RequestKind.WHOLE, grants), 8000 * size))
    total_cpu = sum(cpu for _, cpu in out)
    if total_cpu > info.cpu_milli:  # keep CPU requests within the node
        out = [(a, cpu * info.cpu_milli // (2 * total_cpu)) for a, cpu in out]
    return out


def mig_assignment(node: str, gpu: GpuDevice, profile: str, *, start: int, slices: int,
                   memory: int) -> Assignment:
    return Assignment(node, RequestKind.MIG, (GpuGrant(gpu.index, memory, mig_profile=profile,
                                                       mig_start=start, mig_slices=slices),))


# -- timed paths ------------------------------------------------------------------------------


def vectorized_pod(snap: ClusterSnapshot, *, catalog: Catalog, protection: Protection,
                   strategy: Strategy, case: PodCase) -> Assignment | None:
    preq = resolve_request(case.request, catalog, protection, namespace=case.namespace,
                           cpu_milli=case.cpu_milli)
    result = fit(snap, preq, snap.valid_rows())
    scored = strategy.score(snap, preq, result)
    if len(scored.rows) == 0:
        return None
    best = int(np.argmax(scored.scores))
    choice = int(scored.choice[best])
    return assign(snap, preq, int(scored.rows[best]), order=[choice] if choice >= 0 else None)


def naive_pod(snap: ClusterSnapshot, ref: NaiveReference, scorer: str,
              case: PodCase) -> Assignment | None:
    req = case.request
    fits = []
    for row in range(snap.n_nodes):
        if not snap.node_valid[row]:
            continue
        result = ref.fit_node(snap, req, row, namespace=case.namespace,
                              cpu_milli=case.cpu_milli)
        if result.fits:
            fits.append((row, result.units))
    if not fits:
        return None
    choices = [-1] * len(fits)
    if scorer == "fgd":
        scored = [ref.fgd(snap, req, row, units, SHAPES, cpu_milli=case.cpu_milli)
                  for row, units in fits]
        scores = [s.score for s in scored]
        choices = [s.choice for s in scored]
    elif scorer == "best-fit":
        scores = ref.min_max([ref.best_fit_raw(snap, req, row, units, case.cpu_milli)
                              for row, units in fits])
    else:
        scores = [ref.least_allocated(snap, req, row, units) for row, units in fits]
    best = max(range(len(fits)), key=lambda i: (scores[i], -i))
    choice = choices[best]
    return ref.assign(snap, req, fits[best][0], namespace=case.namespace,
                      order=[choice] if choice >= 0 else None)


def timed(fn: Callable[[], object], reps: int) -> list[float]:
    """Milliseconds per call, ``reps`` calls after one untimed warm-up call."""
    fn()
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def timed_pods(inv: Inventory, fn: Callable[[ClusterSnapshot], Assignment | None],
               reps: int) -> list[float]:
    """Milliseconds per pod, as the service sees them: before each timed call the previous
    pod's placement was reserved and released (untimed), so every call gets a new snapshot
    with one changed row, and the row caches refresh that row inside the timed call."""
    out = []
    for i in range(reps + 1):
        snap = inv.snapshot()
        start = time.perf_counter()
        assignment = fn(snap)
        elapsed = (time.perf_counter() - start) * 1000
        if i:
            out.append(elapsed)
        if assignment is not None:
            inv.assume(PodKey("bench", "next", "next"), assignment)
            inv.forget("next")
    return out


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(np.ceil(0.9 * len(ordered))) - 1)]


@dataclass(frozen=True)
class Bench:
    catalog: Catalog
    scoring: object
    protection: Protection
    ref: NaiveReference
    cases: list[PodCase]
    reps: int
    naive_reps: int


def bench_size(bench: Bench, n: int, seed: int) -> None:
    """Build one cluster and print its tables (markdown)."""
    catalog = bench.catalog
    start = time.perf_counter()
    inv = build_cluster(catalog, n, seed)
    snap = inv.snapshot()
    built = time.perf_counter() - start
    present = snap.gpu_type >= 0
    used = 1 - float(np.clip(snap.free_mib, 0, None)[present].sum()) / float(
        snap.total_mib[present].sum())
    print(f"\n### {n} nodes x {snap.n_gpus} GPUs\n\n{len(inv.holdings())} prior pods, "
          f"{used:.0%} of the VRAM held; built in {built:.1f} s.\n")
    strategies: dict[str, Strategy] = {}
    for name in STRATEGIES:
        strategy = make_strategy(name, StrategyContext(catalog, bench.scoring))  # type: ignore[arg-type]
        frag = getattr(strategy, "frag", None)
        if frag is not None:
            frag.set_shapes(SHAPES)
        strategies[name] = strategy

    # cold: a new shape mix -> FragModel build + the per-node terms of every row
    fill = timed(lambda: FragModel(catalog, SHAPES).node_frag_cached(snap, snap.valid_rows()),
                 5)
    # outside the timed path: the bind's reservation and the copy-on-write snapshots
    probe = resolve_request(bench.cases[1].request, catalog, bench.protection)
    probe_fit = fit(snap, probe, snap.valid_rows())
    probe_assignment = assign(snap, probe, int(probe_fit.rows[np.flatnonzero(probe_fit.fits)[0]]))
    cow = timed(lambda: reserve_release(inv, probe_assignment), 10)
    print(f"- cold (new shape mix): FragModel build + fragmentation terms of all {n} nodes: "
          f"median {statistics.median(fill):.1f} ms")
    print(f"- outside the timed path, per pod: reserve + snapshot + release + snapshot: median "
          f"{statistics.median(cow):.2f} ms\n")

    print("| pod | strategy | median ms | p90 ms | naive ms (same pod) | speed-up |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    summary: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    speedups: list[float] = []
    naive_cache: dict[tuple[str, str], float] = {}
    for case in bench.cases:
        for name in STRATEGIES:
            strategy = strategies[name]
            times = timed_pods(inv, partial(vectorized_pod, catalog=catalog,
                                            protection=bench.protection, strategy=strategy,
                                            case=case), bench.reps)
            key = (case.name, NAIVE_OF[name])
            if key not in naive_cache:
                snap = inv.snapshot()
                naive_times = timed(partial(naive_pod, snap, bench.ref, key[1], case),
                                    bench.naive_reps)
                naive_cache[key] = statistics.median(naive_times)
            median = statistics.median(times)
            speedups.append(naive_cache[key] / median)
            summary[name].append(median)
            print(f"| {case.name} | {name} | {median:.2f} | {p90(times):.2f} | "
                  f"{naive_cache[key]:.0f} ({NAIVE_OF[name]}) | {speedups[-1]:.0f}x |")
    print("\nmedian over the pod kinds: " + ", ".join(
        f"{name} {statistics.median(v):.2f} ms" for name, v in summary.items()) +
        f"; speed-up vs naive: min {min(speedups):.0f}x, median "
        f"{statistics.median(speedups):.0f}x")


def reserve_release(inv: Inventory, assignment: Assignment) -> None:
    inv.assume(PodKey("bench", "probe", "probe"), assignment)
    inv.snapshot()
    inv.forget("probe")
    inv.snapshot()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--reps", type=int, default=30, help="timed pods per row (vectorized)")
    parser.add_argument("--naive-reps", type=int, default=2, help="timed pods per row (naive)")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()

    plat = load_platform()
    catalog = plat.catalog
    policy = ProtectionConfig(None, {})
    bench = Bench(catalog, plat.config.scoring, Protection(policy, catalog),
                  NaiveReference(catalog, policy), pod_cases(catalog), args.reps,
                  args.naive_reps)
    print(f"bench_core {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; python "
          f"{host.python_version()}, numpy {np.__version__}, {host.machine()}, "
          f"{os.cpu_count()} CPUs visible, BLAS/OpenMP threads 1; reps={args.reps}, "
          f"naive_reps={args.naive_reps}, seed={args.seed}")
    cold = timed(lambda: FragModel(catalog, SHAPES), 10)
    print(f"\n- cold: FragModel build for {len(SHAPES)} shapes: median "
          f"{statistics.median(cold):.2f} ms")
    for n in args.sizes:
        bench_size(bench, n, args.seed)


if __name__ == "__main__":
    main()
