"""The preemption decision (``core/preempt.py``) as a table: a node, the pods on it, the
preemptor, and the victims expected, with the arithmetic in the comments.

MiB throughout: an L4 holds 24,576, a T4 16,384; an A100-80GB has 7 one-slot 1g.10gb starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np
import pytest

from extender.core import preempt as preempt_module
from extender.core.fit import FitResult
from extender.core.fit import fit as core_fit
from extender.core.preempt import Drop, NodeVictims, PodOnNode, Shield, preempt
from extender.inventory import ClusterSnapshot, Holding
from extender.model import (
    Assignment,
    DraDeviceRef,
    GpuDevice,
    GpuGrant,
    NodeInfo,
    PodKey,
    RequestKind,
)
from tests.core.helpers import catalog, gpu, inventory, node, placement, request

GIB = 1024
LOW, HIGH = 100, 1000


def share(uid: str, index: int, gib: int, *, priority: int = LOW, started: float = 0.0,
          shield: Shield | None = None, in_tree: bool = False) -> PodOnNode:
    """A VRAM share of ``gib`` GiB on GPU ``index`` of node n1."""
    return PodOnNode(uid, priority, started, Assignment(
        "n1", RequestKind.VRAM, (GpuGrant(index, gib * GIB),)), shield=shield, in_tree=in_tree)


def whole(uid: str, *indices: int, memory: int = 24576, priority: int = LOW,
          started: float = 0.0) -> PodOnNode:
    return PodOnNode(uid, priority, started, Assignment(
        "n1", RequestKind.WHOLE, tuple(GpuGrant(i, memory, whole=True) for i in indices)))


def mig(uid: str, profile: str, start: int, slices: int, *, priority: int = LOW,
        started: float = 0.0) -> PodOnNode:
    return PodOnNode(uid, priority, started, Assignment(
        "n1", RequestKind.MIG, (GpuGrant(0, 9856 * slices, mig_profile=profile,
                                         mig_start=start, mig_slices=slices),)))


def cpu_only(uid: str, *, priority: int = LOW, in_tree: bool = True) -> PodOnNode:
    return PodOnNode(uid, priority, 0.0, None, cpu_milli=1000, in_tree=in_tree)


L4X2 = node("n1", "l4", 2)
A100_MIG = node("n1", gpus=[gpu("a100-80gb", 0, mig=(
    ("3g.40gb", 0), ("1g.10gb", 4), ("1g.10gb", 5), ("1g.10gb", 6)))])
A100X2 = node("n1", "a100-80gb", 2)


@dataclass(frozen=True)
class Case:
    name: str
    info: NodeInfo
    pods: Sequence[PodOnNode]
    kind: str
    count: int = 1
    vram: int = 0
    milli: int = 0
    mig_profile: str | None = None
    types: tuple[str, ...] | None = None
    priority: int = HIGH
    victims: tuple[str, ...] = ()
    drop: Drop | None = None
    namespace: str = ""
    extra: dict[str, object] = field(default_factory=dict)


CASES = [
    # GPU0: 8+8+6 = 22 GiB held, 2 free; GPU1: 10+10 = 20 held, 4 free. A 14 GiB share needs
    # 12 GiB freed on GPU0 (two pods: 8+8 or 8+6) or 10 on GPU1 (one pod: 10): one victim,
    # on GPU1, the newer of d and e.
    Case("one victim on the GPU that needs the fewest", L4X2,
         [share("a", 0, 8), share("b", 0, 8), share("c", 0, 6),
          share("d", 1, 10, started=1.0), share("e", 1, 10, started=2.0)],
         "vram", vram=14 * GIB, victims=("e",)),
    # GPU0: 12+12 = 24 held, 0 free; GPU1: 12+12, 0 free. 14 GiB needs two pods on one GPU
    # (one pod frees 12 < 14); never one on each GPU (12 free on each: fits neither).
    Case("two victims on one GPU, never one per GPU", L4X2,
         [share("a", 0, 12, started=1.0), share("b", 0, 12, started=2.0),
          share("c", 1, 12, started=3.0), share("d", 1, 12, started=4.0)],
         "vram", vram=14 * GIB, victims=("c", "d")),
    # Same node; on GPU1 one pod has priority 50, the others 100: the set {c, d} has the
    # lower top priority (100 on both sets) ... equal top, lower sum 150 < 200 wins.
    Case("lower priority sum wins among equal sizes", L4X2,
         [share("a", 0, 12), share("b", 0, 12),
          share("c", 1, 12, priority=50), share("d", 1, 12)],
         "vram", vram=14 * GIB, victims=("c", "d")),
    # 30 GiB > 24 GiB per L4: no eviction makes a GPU big enough (the node-level 48 would).
    Case("larger than any GPU: dropped, never", L4X2,
         [share("a", 0, 12), share("b", 1, 12)],
         "vram", vram=30 * GIB, drop=Drop.NEVER),
    # Every pod has the preemptor's priority: nothing is eligible.
    Case("equal priority: nothing to evict", L4X2,
         [share("a", 0, 12, priority=HIGH), share("b", 0, 12, priority=HIGH),
          share("c", 1, 12, priority=HIGH), share("d", 1, 12, priority=HIGH)],
         "vram", vram=14 * GIB, drop=Drop.INSUFFICIENT),
    # GPU1's pods are terminating / a DaemonSet pod / in a bind: only GPU0's two are left,
    # 12+12 freed there gives 24 >= 14.
    Case("shielded pods are never victims", L4X2,
         [share("a", 0, 12), share("b", 0, 12),
          share("c", 1, 12, shield=Shield.TERMINATING),
          share("d", 1, 12, shield=Shield.DAEMON_SET)],
         "vram", vram=14 * GIB, victims=("a", "b")),
    Case("bind in flight is no victim either", L4X2,
         [share("a", 0, 20, shield=Shield.BIND_IN_FLIGHT), share("b", 1, 20)],
         "vram", vram=14 * GIB, victims=("b",)),
    # kube's dry run named a CPU-only pod (for CPU room): it stays; its GPU victims (one share
    # per GPU) are replaced by the one-GPU set.
    Case("kube's CPU victims kept, its GPU spread replaced", L4X2,
         [share("a", 0, 12, in_tree=True), share("b", 0, 12),
          share("c", 1, 12, in_tree=True), share("d", 1, 12), cpu_only("x")],
         "vram", vram=14 * GIB, victims=("a", "b", "x")),
    # A fraction of 0.6: 0.6 x 24,576 = 14,746 MiB needed; GPU1 has 4 free + 10 from one pod
    # = 14 GiB = 14,336 < 14,746, so two pods on GPU1 (or two on GPU0). GPU0: 2 free + 8 + 8
    # = 18 >= 14.4; GPU1: 4 + 10 + 10 = 24. Equal size, equal priorities: the newest pair.
    Case("fraction needs its share of VRAM", L4X2,
         [share("a", 0, 8, started=1.0), share("b", 0, 8, started=2.0), share("c", 0, 6),
          share("d", 1, 10, started=5.0), share("e", 1, 10, started=6.0)],
         "fraction", milli=600, victims=("d", "e")),
    # Whole GPU: GPU0 holds 3 shares, GPU1 holds 1 share: evicting GPU1's one pod frees a
    # whole GPU; never a pod of each.
    Case("whole GPU: the GPU with the fewest pods", L4X2,
         [share("a", 0, 4), share("b", 0, 4), share("c", 0, 4), share("d", 1, 2)],
         "whole", victims=("d",)),
    # Two whole GPUs: every pod of both must go (3 + 1 = 4 victims).
    Case("two whole GPUs: every pod of both", L4X2,
         [share("a", 0, 4), share("b", 0, 4), share("c", 0, 4), share("d", 1, 2)],
         "whole", count=2, victims=("a", "b", "c", "d")),
    # A whole-GPU pod holding both A100s: evicting it frees two GPUs.
    Case("one victim holding two GPUs", A100X2, [whole("w", 0, 1, memory=81920)],
         "whole", count=2, types=("a100-80gb",), victims=("w",)),
    # MIG: the 1g.10gb starts 4, 5, 6 are taken; 3g.40gb at 0 is also taken by a pod of lower
    # priority (10), yet evicting it frees no 1g.10gb start in this static layout: the
    # victim is a 1g.10gb instance, the newest one.
    Case("MIG: only instances of the requested profile", A100_MIG,
         [mig("big", "3g.40gb", 0, 4, priority=10), mig("m4", "1g.10gb", 4, 1, started=1.0),
          mig("m5", "1g.10gb", 5, 1, started=3.0), mig("m6", "1g.10gb", 6, 1, started=2.0)],
         "mig", mig_profile="1g.10gb", types=("a100-80gb",), victims=("m5",)),
    # Only the 3g.40gb is full (of low priority); the 1g.10gb instances are high: the node
    # cannot give a 1g.10gb.
    Case("MIG: another profile's pod does not count", A100_MIG,
         [mig("big", "3g.40gb", 0, 4), mig("m4", "1g.10gb", 4, 1, priority=HIGH),
          mig("m5", "1g.10gb", 5, 1, priority=HIGH), mig("m6", "1g.10gb", 6, 1, priority=HIGH)],
         "mig", mig_profile="1g.10gb", types=("a100-80gb",), drop=Drop.INSUFFICIENT),
    # MIG partitions the pod did not ask for: a VRAM share never fits a partitioned GPU.
    Case("a partition it did not ask for", A100_MIG, [mig("big", "3g.40gb", 0, 4)],
         "vram", vram=4 * GIB, types=("a100-80gb",), drop=Drop.NEVER),
    # An untyped pod on a protected A100 node (full of low-priority whole pods): never.
    Case("untyped pod on a protected type", A100X2,
         [whole("a", 0, memory=81920), whole("b", 1, memory=81920)],
         "whole", drop=Drop.NEVER),
    # The same pod typed for the A100: one of the two, the newer.
    Case("typed pod on the same node", A100X2,
         [whole("a", 0, memory=81920, started=1.0), whole("b", 1, memory=81920, started=2.0)],
         "whole", types=("a100-80gb",), victims=("b",)),
    # GPU0 has 12 free already: a 10 GiB share fits with no GPU victim, and kube named none
    # for CPU: dropped (an empty list fails 1.36's preemption).
    Case("fits already, no other victim: dropped", L4X2,
         [share("a", 0, 12), share("b", 1, 24)],
         "vram", vram=10 * GIB, drop=Drop.FITS),
    # ... and with kube's CPU victim, only that one.
    Case("fits already: kube's CPU victim only", L4X2,
         [share("a", 0, 12), share("b", 1, 24), cpu_only("x")],
         "vram", vram=10 * GIB, victims=("x",)),
]


CROWD = (node("n0", "t4", 1), node("n2", "a100-80gb", 4))
"""Nodes around the candidate: the inventory's rows are per node, the what-if's per victim set
(a what-if that kept one of the inventory's per-node arrays broke every share, fraction and MIG
preemption on a cluster of more than one node)."""


def decide(case: Case, *, max_sets: int = 4096, crowd: bool = False) -> NodeVictims:
    inv = inventory(CROWD[0], case.info, CROWD[1]) if crowd else inventory(case.info)
    for pod in case.pods:
        inv.observe(Holding(PodKey("default", pod.uid, pod.uid), "n1", pod.assignment,
                            pod.cpu_milli, pod.memory_mib))
    req = request(case.kind, case.count, vram=case.vram, milli=case.milli,
                  mig=case.mig_profile, types=case.types)
    [result] = preempt(inv.snapshot(), placement(req, case.namespace), case.priority,
                       {"n1": case.pods}, max_sets=max_sets)
    return result


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_preemption_table(case: Case) -> None:
    result = decide(case)
    assert (result.drop, set(result.victims)) == (case.drop, set(case.victims))
    assert result.num_pdb_violations == 0
    if result.drop is not None:
        assert result.victims == ()  # never a node with an empty list: it is dropped


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_same_decision_with_other_nodes_in_the_inventory(case: Case) -> None:
    """n1 is the middle row of three: every case is decided as on n1 alone."""
    alone, crowded = decide(case), decide(case, crowd=True)
    assert (crowded.drop, set(crowded.victims)) == (alone.drop, set(alone.victims))


def test_every_per_node_array_of_a_what_if_has_a_row_per_victim_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A what-if copy is the candidate's row once per set tried, in every per-node array of
    the snapshot (a field added to ``ClusterSnapshot`` and forgotten here fails this)."""
    seen: list[ClusterSnapshot] = []

    def recording_fit(snapshot: ClusterSnapshot, *args: object, **kw: object) -> FitResult:
        seen.append(snapshot)
        return core_fit(snapshot, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(preempt_module, "fit", recording_fit)
    case = Case("crowded", L4X2, [share("a", 0, 12), share("b", 0, 12), share("c", 1, 24)],
                "vram", vram=20 * GIB)
    assert decide(case, crowd=True).victims  # sets of 1, 2 ... tried: what-ifs of 1 and more
    assert seen and any(s.n_nodes > 1 for s in seen)
    for what_if in seen:
        m = what_if.n_nodes
        per_node = {f.name: getattr(what_if, f.name) for f in fields(what_if)
                    if isinstance(getattr(what_if, f.name), np.ndarray) and f.name != "layouts"}
        assert per_node and {name: a.shape[0] for name, a in per_node.items()} == \
            dict.fromkeys(per_node, m)


def test_a_dra_node_takes_no_share_whatever_is_evicted() -> None:
    """A DRA-managed node's GPUs are its driver's: a share can never use them, so no victim is
    named there (the what-if reads the candidate's DRA flag, not another row's)."""
    gpus = [GpuDevice(i, catalog().index_of("l4"), 24576, dra_device=f"gpu-{i}")
            for i in range(2)]
    dra = NodeInfo(name="n1", gpus=tuple(gpus), cpu_milli=64_000, memory_mib=256_000,
                   type_name="l4", dra_devices=tuple(DraDeviceRef(g.dra_device, g.index, "gpu",
                                                                  g.memory_mib) for g in gpus))
    case = Case("dra", dra, [share("a", 0, 12), share("b", 0, 12)], "vram", vram=12 * GIB)
    assert decide(case, crowd=True).drop is Drop.NEVER
    assert decide(case).drop is Drop.NEVER


@pytest.mark.parametrize("case", [c for c in CASES if c.drop is None], ids=lambda c: c.name)
def test_greedy_search_agrees_on_small_nodes(case: Case) -> None:
    """Past ``max_sets`` the search is greedy; on these nodes it finds sets as small."""
    exact, greedy = decide(case), decide(case, max_sets=0)
    assert len(greedy.victims) == len(exact.victims)


def test_unknown_node_is_dropped() -> None:
    inv = inventory(L4X2)
    [result] = preempt(inv.snapshot(), placement(request("vram", vram=GIB)), HIGH,
                       {"gone": [share("a", 0, 1)]})
    assert result.drop is Drop.UNKNOWN_NODE


def test_never_a_victim_of_equal_or_higher_priority() -> None:
    """Whatever the mix, no returned victim has priority >= the preemptor's."""
    pods = [share(f"p{i}", i % 2, 6, priority=p) for i, p in enumerate([10, 999, 1000, 1001,
                                                                        5, 998, 2000, 0])]
    # each GPU: four 6 GiB pods (24 held, 0 free); 12 GiB needs two eligible pods on one GPU
    case = Case("mix", L4X2, pods, "vram", vram=12 * GIB)
    result = decide(case)
    by_uid = {p.uid: p for p in pods}
    assert result.victims
    assert all(by_uid[u].priority < HIGH for u in result.victims)
