"""Small builders for the simulator and baseline tests: nodes whose GPUs have 1000 MiB (so a
share of ``m`` thousandths holds exactly ``m`` MiB), inventories, placements, scores."""

from __future__ import annotations

import functools
import itertools

import numpy as np

from extender.catalog import Catalog
from extender.core.assign import assign
from extender.core.fit import fit
from extender.core.request import PlacementRequest
from extender.core.scoring.base import ScoreResult, StrategyContext
from extender.core.scoring.registry import make_strategy
from extender.inventory import Inventory
from extender.model import GpuDevice, GpuRequest, NodeInfo, PodKey, RequestKind
from extender.platform import Platform, load_platform

_uids = itertools.count()


@functools.cache
def platform() -> Platform:
    return load_platform()


def catalog() -> Catalog:
    return platform().catalog


def node(name: str, gpus: int, *, cpu: int = 64_000, memory: int = 256_000,
         type_id: str = "t4") -> NodeInfo:
    type_index = catalog().index_of(type_id)
    devices = tuple(GpuDevice(index=i, type_index=type_index, memory_mib=1000)
                    for i in range(gpus))
    return NodeInfo(name=name, gpus=devices, cpu_milli=cpu, memory_mib=memory)


def inventory(*nodes: NodeInfo) -> Inventory:
    inv = Inventory(catalog())
    for info in nodes:
        inv.upsert_node(info)
    return inv


def share(milli: int) -> GpuRequest:
    return GpuRequest(RequestKind.FRACTION, 1, milli=milli)


def whole(count: int) -> GpuRequest:
    return GpuRequest(RequestKind.WHOLE, count)


def preq(request: GpuRequest, cpu: int = 0) -> PlacementRequest:
    return platform().placement_request(request, cpu_milli=cpu)


def place(inv: Inventory, node_name: str, request: GpuRequest, slot: int | None = None,
          cpu: int = 0) -> None:
    """Reserve ``request`` on ``node_name`` (on GPU ``slot`` when given)."""
    snap = inv.snapshot()
    row = snap.node_index[node_name]
    assignment = assign(snap, preq(request, cpu), row,
                        order=None if slot is None else [slot])
    uid = f"uid-{next(_uids)}"
    inv.assume(PodKey("test", uid, uid), assignment, cpu_milli=cpu)


def score(name: str, inv: Inventory, request: GpuRequest, cpu: int = 0,
          seed: int = 0) -> ScoreResult:
    snap = inv.snapshot()
    req = preq(request, cpu)
    strategy = make_strategy(name, StrategyContext(catalog(), platform().config.scoring,
                                                   rng=np.random.default_rng(seed)))
    return strategy.score(snap, req, fit(snap, req, snap.valid_rows(), check_cpu_memory=True))
