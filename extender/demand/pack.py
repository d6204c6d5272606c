"""First-fit-decreasing packing of waiting pods into new nodes of whole GPUs (pure: no kube).

Every pod (a ``Need``) may go on the offered types it accepts (``Need.types``, already cut by
protection and ``demand.types``); the plan opens as few GPUs as it can, on the cheapest type
that holds each pod, by the VRAM a GPU of that type really has (``Offer.vram_mib``: what a node
of that type reports, GFD's ``nvidia.com/gpu.memory``, else the catalog's).

The rules, per request kind:

- **VRAM share** (``vram_mib``): on one GPU with that much VRAM left;
- **fraction** (``milli``): on one GPU, holding ``ceil(milli x VRAM / 1000)`` MiB of it (what the
  core books for a fraction), so shares and fractions pack together;
- **whole GPUs** and **time-slice replicas** (``count``): ``count`` untouched GPUs of one node
  (a new node's time-slicing is not known in advance, so a replica is planned as a GPU);
- **MIG** (``count`` instances of ``mig_profile``): the simplest honest rule: whole untouched
  GPUs of a type that has the profile, ``ceil(count / instances per GPU)`` of them, never shared
  with another pod (how a new GPU gets partitioned is the MIG manager's business, not ours).

Pods are taken largest first (whole and MIG pods, then shares by the part of their cheapest
GPU they fill), ties by pod name, so the plan is deterministic. A node holds
``Offer.gpus_per_node`` GPUs; a pod that no offered type can hold is ``unserved`` with why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from extender.model import RequestKind

WHOLE_KINDS = frozenset({RequestKind.WHOLE, RequestKind.SHARED})


@dataclass(frozen=True)
class Offer:
    """A GPU type an autoscaler can provide, as one new node of it would be."""

    type_id: str
    vram_mib: int
    price: float
    gpus_per_node: int = 1
    mig_per_gpu: Mapping[str, int] = field(default_factory=dict)
    """MIG profile -> instances of it one GPU holds (``slots // slices``); empty: no MIG."""


@dataclass(frozen=True)
class Need:
    """What one waiting pod asks for."""

    pod: str
    """``namespace/name``."""
    kind: RequestKind
    types: frozenset[str]
    """Offered type ids the pod may use."""
    count: int = 1
    vram_mib: int = 0
    milli: int = 0
    mig_profile: str | None = None


@dataclass(frozen=True)
class PlannedNode:
    type_id: str
    gpus: int
    """GPUs per node (the shape)."""
    pods: tuple[str, ...]
    """The pods it is for, in the order they were packed."""
    gpus_used: int
    """GPUs the pods take (<= ``gpus``)."""


@dataclass(frozen=True)
class Plan:
    nodes: tuple[PlannedNode, ...]
    unserved: tuple[tuple[str, str], ...] = ()
    """``(pod, why)`` for pods no offered type can hold."""

    def shapes(self) -> dict[tuple[str, int], list[PlannedNode]]:
        """``(type id, GPUs per node)`` -> its planned nodes, in plan order."""
        out: dict[tuple[str, int], list[PlannedNode]] = {}
        for node in self.nodes:
            out.setdefault((node.type_id, node.gpus), []).append(node)
        return out


@dataclass
class _OpenNode:
    offer: Offer
    free: list[int]
    """MiB left per GPU; a GPU taken whole has ``-1``."""
    pods: list[str] = field(default_factory=list)

    def take(self, need: Need) -> bool:
        whole = _whole_gpus(need, self.offer)
        if whole:
            untouched = [i for i, left in enumerate(self.free) if left == self.offer.vram_mib]
            if len(untouched) < whole:
                return False
            for i in untouched[:whole]:
                self.free[i] = -1
        else:
            mib = _share_mib(need, self.offer)
            spot = next((i for i, left in enumerate(self.free) if left >= mib), None)
            if spot is None:
                return False
            self.free[spot] -= mib
        self.pods.append(need.pod)
        return True

    def planned(self) -> PlannedNode:
        used = sum(1 for left in self.free if left != self.offer.vram_mib)
        return PlannedNode(self.offer.type_id, self.offer.gpus_per_node, tuple(self.pods), used)


def _whole_gpus(need: Need, offer: Offer) -> int:
    """Untouched GPUs the pod takes on ``offer`` (0: a share)."""
    if need.kind in WHOLE_KINDS:
        return need.count
    if need.kind is RequestKind.MIG:
        per_gpu = offer.mig_per_gpu.get(need.mig_profile or "", 0)
        return math.ceil(need.count / per_gpu) if per_gpu else 0
    return 0


def _share_mib(need: Need, offer: Offer) -> int:
    if need.kind is RequestKind.FRACTION:
        return math.ceil(need.milli * offer.vram_mib / 1000)
    return need.vram_mib


def why_not(need: Need, offer: Offer) -> str:
    """Why one new node of ``offer`` cannot hold the pod ('' when it can)."""
    if need.kind is RequestKind.MIG:
        if need.mig_profile not in offer.mig_per_gpu:
            return f"{offer.type_id} has no MIG profile {need.mig_profile}"
    elif need.kind not in WHOLE_KINDS:
        mib = _share_mib(need, offer)
        return "" if mib <= offer.vram_mib else \
            f"{offer.type_id} GPUs have {offer.vram_mib} MiB < {mib} MiB"
    whole = _whole_gpus(need, offer)
    if whole > offer.gpus_per_node:
        return f"asks {whole} GPUs on one node; a new {offer.type_id} node has " \
               f"{offer.gpus_per_node}"
    return ""


def _size(need: Need, offers: Sequence[Offer]) -> float:
    """Sort key: whole and MIG pods first (by GPUs), then shares by the part of their
    cheapest holding GPU they fill."""
    if need.kind in WHOLE_KINDS or need.kind is RequestKind.MIG:
        return 1.0 + need.count
    offer = offers[0] if offers else None
    if offer is None or offer.vram_mib <= 0:
        return 0.0
    return _share_mib(need, offer) / offer.vram_mib


def pack(needs: Iterable[Need], offers: Iterable[Offer]) -> Plan:
    """The plan: new nodes (fewest GPUs, cheapest types first) for ``needs``."""
    needs = list(needs)
    ranked = sorted(offers, key=lambda o: (o.price, o.type_id))
    usable: dict[str, list[Offer]] = {}
    unserved: list[tuple[str, str]] = []
    for need in needs:
        fitting = [o for o in ranked if o.type_id in need.types and not why_not(need, o)]
        if fitting:
            usable[need.pod] = fitting
            continue
        reasons = [why_not(need, o) for o in ranked if o.type_id in need.types]
        unserved.append((need.pod, "; ".join(reasons) or "no GPU type an autoscaler provides "
                                                         "is one the pod accepts"))
    return _place([n for n in needs if n.pod in usable], usable, ranked, unserved)


def _place(needs: list[Need], usable: Mapping[str, list[Offer]], ranked: list[Offer],
           unserved: list[tuple[str, str]]) -> Plan:
    order = sorted(needs, key=lambda n: (-_size(n, usable[n.pod]), n.pod))
    rank = {o.type_id: i for i, o in enumerate(ranked)}
    opened: list[_OpenNode] = []
    for need in order:
        fitting = {o.type_id for o in usable[need.pod]}
        candidates = sorted((n for n in opened if n.offer.type_id in fitting),
                            key=lambda n: rank[n.offer.type_id])  # stable: open order next
        if any(node.take(need) for node in candidates):
            continue
        cheapest = usable[need.pod][0]
        node = _OpenNode(cheapest, [cheapest.vram_mib] * cheapest.gpus_per_node)
        taken = node.take(need)
        assert taken, "why_not() said the pod fits a new node"
        opened.append(node)
    return Plan(tuple(n.planned() for n in opened), tuple(unserved))
