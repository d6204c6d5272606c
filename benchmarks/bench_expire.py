"""What the hold expiry's sweep costs with many pods held (issue 22).

The extender releases holds whose TTL passed at most every 0.25 s (``scheduling/expiry.py``),
under the inventory's lock, which the watches and binds wait for. The sweep looks only at the
holds that have a TTL; a sweep over every holding (what it did before: here through the public
``holdings()``, which also copies the list) is timed beside it, on
the same inventory: N nodes x 8 T4, every GPU held by a running pod, and ``--assumed`` holds
with a TTL (a burst's pods between prioritize and bind).

    .venv/bin/python benchmarks/bench_expire.py --nodes 2000 --assumed 32
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_verbs import _assigned, _gfd, _node, _running_pod

from extender.inventory.store import HoldingState, Inventory
from extender.model import Assignment, GpuGrant, PodKey, RequestKind
from extender.platform import load_platform
from extender.sync.apply import InventoryApplier

GPUS = 8


def fleet(n_nodes: int, assumed: int) -> Inventory:
    """``n_nodes`` x 8 T4, every GPU of all but the last ``assumed`` nodes held by a running
    pod, and one assumed hold with a 60 s TTL on each GPU of those."""
    platform = load_platform()
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    for i in range(n_nodes):
        applier.node_event("ADDED", _node(f"n{i:05d}", _gfd("Tesla-T4", 15360, GPUS),
                                          {"nvidia.com/gpu": str(GPUS)}))
    free_nodes = -(-assumed // GPUS)
    for i in range(n_nodes - free_nodes):
        node = f"n{i:05d}"
        for g in range(GPUS):
            grant = [{"index": g, "vramMiB": 15360, "whole": True}]
            applier.pod_event("ADDED", _running_pod(f"p{i}-{g}", node, _assigned(
                node, "whole", "t4", grant), {"nvidia.com/gpu": "1"}))
    for k in range(assumed):
        node = f"n{n_nodes - free_nodes + k // GPUS:05d}"
        assignment = Assignment(node, RequestKind.WHOLE,
                                (GpuGrant(k % GPUS, 15360, whole=True),), "t4")
        inventory.assume(PodKey("bench", f"a{k}", f"uid-a{k}"), assignment, ttl=60.0)
    return inventory


def per_call_us(call: Callable[[], Any], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--assumed", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    if args.nodes < 1 or args.assumed < 0 or args.repeat < 1 or \
            args.assumed > args.nodes * GPUS:
        parser.error("--nodes and --repeat must be >= 1, 0 <= --assumed <= 8 x --nodes")
    inventory = fleet(args.nodes, args.assumed)

    def every_holding() -> list[Any]:
        now = time.monotonic()
        return [h for h in inventory.holdings() if h.state is HoldingState.ASSUMED
                and h.expires_at is not None and h.expires_at <= now]

    held = len(inventory.holdings())
    print(f"{args.nodes} nodes x {GPUS} T4, {held} pods held, {args.assumed} with a TTL")
    print(f"sweep over every holding: {per_call_us(every_holding, args.repeat):9.1f} us")
    print(f"Inventory.expire():       {per_call_us(inventory.expire, args.repeat):9.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
