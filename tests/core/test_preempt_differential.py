"""The preemption decision (``core/preempt.py``) against a naive reference, on seeded random
nodes: every subset of the evictable pods is tried, smallest first, by rebuilding the
inventory without them and asking the naive fit (``tests/reference/naive.py``) whether the
preemptor fits then. The decision must name the same victims (the fewest, then the documented
preference: lowest top priority, lowest sum, newest, then UIDs) or drop the node for the same
reason.

The candidate sits among other random nodes, so a what-if that is not a true copy of the
candidate's row (the bug that broke every share preemption on clusters of more than one node)
differs from the reference's rebuilt inventory.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from extender.core.assign import NoFitError, assign
from extender.core.fit import fit
from extender.core.preempt import Drop, NodeVictims, PodOnNode, preempt
from extender.core.reasons import VERDICT_BY_CODE, Reason
from extender.inventory import ClusterSnapshot, Holding
from extender.model import GpuRequest, NodeInfo, PodKey, RequestKind, Verdict
from tests.core.helpers import inventory, placement, random_node, random_request, reference

CANDIDATE = "n1"
PREEMPTOR_PRIORITY = 500
PRIORITIES = (50, 100, 100, 499, 500, 1000)
"""Below, at and above the preemptor's: pods at or above it are never victims."""
SEEDS = range(300)


@dataclass(frozen=True)
class Scene:
    crowd: tuple[NodeInfo, NodeInfo]
    candidate: NodeInfo
    pods: tuple[PodOnNode, ...]
    request: GpuRequest
    namespace: str

    def snapshot(self, without: frozenset[str] = frozenset()) -> ClusterSnapshot:
        """The cluster with every pod but ``without`` bound, built afresh."""
        inv = inventory(self.crowd[0], self.candidate, self.crowd[1])
        for pod in self.pods:
            if pod.uid not in without:
                assert pod.assignment is not None
                inv.observe(Holding(PodKey("default", pod.uid, pod.uid), CANDIDATE,
                                    pod.assignment))
        return inv.snapshot()


def untyped(req: GpuRequest) -> GpuRequest:
    return GpuRequest(kind=req.kind, count=req.count, vram_mib=req.vram_mib, milli=req.milli,
                      mig_profile=req.mig_profile)


def like(pod: PodOnNode, scale: int) -> GpuRequest:
    """A request of the kind ``pod`` holds, ``scale`` times as large: what evicting it, or it
    and its neighbours, would make room for."""
    assert pod.assignment is not None
    grants = pod.assignment.grants
    kind = pod.assignment.kind
    if kind is RequestKind.VRAM:
        return GpuRequest(kind=kind, count=1, vram_mib=grants[0].vram_mib * scale)
    if kind is RequestKind.FRACTION:
        return GpuRequest(kind=kind, count=1, milli=min(1000, 300 * scale))
    return GpuRequest(kind=kind, count=min(8, len(grants) * scale),
                      mig_profile=grants[0].mig_profile)


def scene(seed: int) -> Scene:
    """A GPU node filled with up to seven random pods of random priorities, between two random
    nodes, and a random preemptor (typed or not, any namespace)."""
    rng = np.random.default_rng(seed)
    candidate = random_node(rng, CANDIDATE)
    while not candidate.gpus:
        candidate = random_node(rng, CANDIDATE)
    crowd = (random_node(rng, "n0"), random_node(rng, "n2"))
    inv = inventory(candidate)
    pods: list[PodOnNode] = []
    for attempt in range(40):
        if len(pods) == 7:
            break
        req = untyped(random_request(rng)[0])
        preq = placement(req, "platform")
        snap = inv.snapshot()
        if not fit(snap, preq, np.array([0], dtype=np.int64)).fits[0]:
            continue
        try:
            assignment = assign(snap, preq, 0)
        except NoFitError:  # pragma: no cover - fit said it fits
            continue
        uid = f"p{attempt:02d}"
        inv.observe(Holding(PodKey("default", uid, uid), CANDIDATE, assignment))
        pods.append(PodOnNode(uid, int(rng.choice(PRIORITIES)), float(rng.integers(0, 4)),
                              assignment))
    req, namespace, _ = random_request(rng)
    if pods and rng.random() < 0.6:
        req, namespace = like(pods[int(rng.integers(len(pods)))], int(rng.integers(1, 4))), \
            "platform"
    elif rng.random() < 0.6:  # most preemptors could use the node: the search is what is tested
        req, namespace = untyped(req), "platform"
    return Scene(crowd, candidate, tuple(pods), req, namespace)


def in_pool(pod: PodOnNode, req: GpuRequest) -> bool:
    """docs/preemption.md: MIG requests evict only instances of their profile; other requests
    only pods holding a non-MIG grant."""
    grants = pod.assignment.grants if pod.assignment is not None else ()
    if req.kind is RequestKind.MIG:
        return bool(grants) and all(g.mig_profile == req.mig_profile for g in grants)
    return any(g.mig_profile is None for g in grants)


def preference(pods: Sequence[PodOnNode]) -> tuple[int, int, float, tuple[str, ...]]:
    priorities = [p.priority for p in pods]
    return (max(priorities), sum(priorities), -sum(p.started for p in pods),
            tuple(sorted(p.uid for p in pods)))


def expected(s: Scene) -> tuple[Drop | None, frozenset[str]]:
    """By brute force: the smallest set of evictable pods whose absence lets the pod fit."""
    naive = reference()

    def fit_code(without: frozenset[str]) -> int:
        snap = s.snapshot(without)
        return naive.fit_node(snap, s.request, snap.node_index[CANDIDATE],
                              namespace=s.namespace).code

    base = fit_code(frozenset())
    if VERDICT_BY_CODE[base] == Verdict.UNRESOLVABLE.value:
        return Drop.NEVER, frozenset()
    if base == Reason.FITS:
        return Drop.FITS, frozenset()
    pool = [p for p in s.pods if p.priority < PREEMPTOR_PRIORITY and in_pool(p, s.request)]
    for k in range(1, len(pool) + 1):
        fitting = [c for c in itertools.combinations(pool, k)
                   if fit_code(frozenset(p.uid for p in c)) == Reason.FITS]
        if fitting:
            return None, frozenset(p.uid for p in min(fitting, key=preference))
    return Drop.INSUFFICIENT, frozenset()


def decided(s: Scene) -> NodeVictims:
    [result] = preempt(s.snapshot(), placement(s.request, s.namespace), PREEMPTOR_PRIORITY,
                       {CANDIDATE: s.pods})
    return result


@pytest.mark.parametrize("seed", SEEDS)
def test_preemption_agrees_with_brute_force(seed: int) -> None:
    s = scene(seed)
    drop, victims = expected(s)
    result = decided(s)
    assert (result.drop, frozenset(result.victims)) == (drop, victims), (
        f"request {s.request} in {s.namespace!r}; pods "
        f"{[(p.uid, p.priority, p.started, p.assignment) for p in s.pods]}")
    assert result.gpu_victims == len(victims)


def test_the_seeds_reach_every_outcome() -> None:
    """The generator is worth its run time only if it reaches each branch of the decision."""
    outcomes: dict[str, int] = {}
    for seed in SEEDS:
        drop, victims = expected(scene(seed))
        key = drop.name if drop is not None else f"victims={min(len(victims), 3)}"
        outcomes[key] = outcomes.get(key, 0) + 1
    every = {"NEVER", "FITS", "INSUFFICIENT", "victims=1", "victims=2", "victims=3"}
    assert set(outcomes) >= every, outcomes



def test_the_seeds_ask_for_every_request_kind() -> None:
    assert {scene(seed).request.kind for seed in SEEDS} == set(RequestKind)
