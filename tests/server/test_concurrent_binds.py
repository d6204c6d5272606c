"""Many binds at once, against an API with latency: never two pods on one whole GPU, never
more VRAM than a GPU has, never two MIG instances on the same slots."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs, ExtenderBindingArgs
from tests.server.conftest import online_service
from tests.server.invariants import assert_gpu_invariants, holdings_by_pod, node_rows
from tests.sync.clusters import mig_pod, mixed_nodes, replica_pod, vram_pod, whole_pod
from tests.sync.fake_api import FakeApiServer

NODES_BY_KIND = {"whole": "l4", "vram": "t4", "mig": "mig", "replica": "shared"}


def make_pods(rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    pods = []
    for i in range(50):
        pods.append(("whole", whole_pod(f"whole-{i}", rng.choice([1, 1, 2]))))
        pods.append(("vram", vram_pod(f"vram-{i}", rng.choice(["3Gi", "4Gi", "6Gi"]))))
        pods.append(("mig", mig_pod(f"mig-{i}", rng.choice(["1g.10gb", "2g.20gb",
                                                               "3g.40gb"]))))
        pods.append(("replica", replica_pod(f"replica-{i}", rng.choice([1, 2]))))
    rng.shuffle(pods)
    return pods


def test_concurrent_binds_keep_every_gpu_invariant(platform: Platform) -> None:
    rng = random.Random(7)
    nodes = mixed_nodes(per_kind=3)
    pods = make_pods(rng)
    api = FakeApiServer(nodes, [pod for _, pod in pods], latency=0.002, seed=3)
    service = online_service(platform, api)
    names = [n["metadata"]["name"] for n in nodes]

    # a third of the pods went through filter+prioritize first (serial, as in kube), so
    # binds meet reservations, some on the node kube then chooses and some elsewhere
    targets: list[ExtenderBindingArgs] = []
    for i, (kind, pod) in enumerate(pods):
        meta = pod["metadata"]
        candidates = [n for n in names if n.startswith(NODES_BY_KIND[kind])]
        node = rng.choice(candidates)
        if i % 3 == 0:
            args = ExtenderArgs(Pod=api.get_pod(meta["namespace"], meta["name"]), Nodes=None,
                                NodeNames=names)
            feasible = service.verbs.filter(args).document()["NodeNames"] or []
            scores = service.verbs.prioritize(args).document()
            if feasible and i % 2 == 0:
                node = max(scores, key=lambda s: s["Score"])["Host"]
        targets.append(ExtenderBindingArgs(PodName=meta["name"],
                                           PodNamespace=meta["namespace"],
                                           PodUID=meta["uid"], Node=node))

    start = threading.Event()

    def bind(args: ExtenderBindingArgs) -> str:
        start.wait(timeout=10)  # the first 32 binds leave together
        return service.verbs.bind(args).document()["Error"]

    with ThreadPoolExecutor(max_workers=32) as pool:
        futures = [pool.submit(bind, target) for target in targets]
        start.set()
        errors = [future.result() for future in futures]

    bound = {name for (_, name), pod in api.pods.items() if pod["spec"].get("nodeName")}
    succeeded = {t["PodName"] for t, e in zip(targets, errors, strict=True) if e == ""}
    assert bound == succeeded
    assert 60 < len(succeeded) < len(pods)  # plenty of both outcomes
    failed = [e for e in errors if e]
    assert all(e.startswith("no longer fits") for e in failed), set(failed)
    assert_gpu_invariants(list(api.pods.values()), service.inventory)
    for target, error in zip(targets, errors, strict=True):
        holding = service.inventory.holding(target["PodUID"])
        assert (holding is not None) == (error == "") or (holding and holding.state.value
                                                           == "reserved")

    # restart: a fresh process rebuilds exactly the same allocation from the API
    expire_reservations(service)
    fresh = online_service(platform, api)
    assert node_rows(fresh.inventory.snapshot()) == node_rows(service.inventory.snapshot())
    assert holdings_by_pod(fresh.inventory) == holdings_by_pod(service.inventory)


def expire_reservations(service: ExtenderService) -> None:
    """Prioritize-time holds of pods whose bind failed would expire; drop them now."""
    for holding in service.inventory.holdings():
        if holding.state.value == "reserved":
            service.inventory.forget(holding.key.uid)
