"""First-fit-decreasing packing of waiting pods into new GPU nodes: how many nodes of which
type, and which pods each is for. Each case's comment shows the arithmetic."""

from __future__ import annotations

import pytest

from extender.demand.pack import Need, Offer, Plan, pack
from extender.model import RequestKind

P = pytest.param
T4 = Offer("t4", 15360, 0.53)          # GFD reports 15360 MiB for a T4 (nominal 16384)
L4 = Offer("l4", 23034, 0.80)
A100 = Offer("a100-80gb", 81920, 3.43, mig_per_gpu={"1g.10gb": 7, "3g.40gb": 2})
ANY = frozenset({"t4", "l4"})


def share(pod: str, mib: int, types: frozenset[str] = ANY) -> Need:
    return Need(pod, RequestKind.VRAM, types, vram_mib=mib)


def fraction(pod: str, milli: int, types: frozenset[str] = ANY) -> Need:
    return Need(pod, RequestKind.FRACTION, types, milli=milli)


def whole(pod: str, count: int, types: frozenset[str] = ANY) -> Need:
    return Need(pod, RequestKind.WHOLE, types, count=count)


def summary(plan: Plan) -> list[tuple[str, int, int, tuple[str, ...]]]:
    return [(n.type_id, n.gpus, n.gpus_used, n.pods) for n in plan.nodes]


@pytest.mark.parametrize(("needs", "offers", "expected"), [
    # four 3 GiB shares: 4 x 3072 = 12288 <= 15360 -> one GPU, one one-GPU T4 node
    P([share(f"d/s{i}", 3072) for i in range(4)], [T4, L4],
      [("t4", 1, 1, ("d/s0", "d/s1", "d/s2", "d/s3"))], id="four 3 GiB shares, one T4"),
    # five fill a T4 exactly: 5 x 3072 = 15360 <= 15360; the sixth opens a second node
    P([share(f"d/s{i}", 3072) for i in range(6)], [T4, L4],
      [("t4", 1, 1, ("d/s0", "d/s1", "d/s2", "d/s3", "d/s4")), ("t4", 1, 1, ("d/s5",))],
      id="six 3 GiB shares, two T4"),
    # 4 x 4096 = 16384 > 15360 (a real T4) though = the nominal 16384: 3 + 1
    P([share(f"d/s{i}", 4096) for i in range(4)], [T4],
      [("t4", 1, 1, ("d/s0", "d/s1", "d/s2")), ("t4", 1, 1, ("d/s3",))],
      id="by the reported VRAM, not the nominal"),
    # 20480 > 15360 (T4) but <= 23034 (L4): the cheapest type that holds it
    P([share("d/big", 20480)], [T4, L4], [("l4", 1, 1, ("d/big",))], id="too big for a T4"),
    # largest first: 12288 on the first T4, 8192 does not fit beside it (12288 + 8192 >
    # 15360) and opens the second; 2048 fits beside 12288 (14336 <= 15360)
    P([share("d/a", 2048), share("d/b", 8192), share("d/c", 12288)], [T4],
      [("t4", 1, 1, ("d/c", "d/a")), ("t4", 1, 1, ("d/b",))], id="decreasing order"),
    # fractions by milli: 600 + 400 = 1000 -> one GPU; 600 + 600 > 1000 -> two
    P([fraction("d/f1", 600), fraction("d/f2", 400)], [T4], [("t4", 1, 1, ("d/f1", "d/f2"))],
      id="fractions that add up to one GPU"),
    P([fraction("d/f1", 600), fraction("d/f2", 600)], [T4],
      [("t4", 1, 1, ("d/f1",)), ("t4", 1, 1, ("d/f2",))], id="fractions over one GPU"),
    # a fraction holds ceil(500 x 15360 / 1000) = 7680 MiB; + 7680 share = 15360 <= 15360
    P([fraction("d/f", 500), share("d/s", 7680)], [T4], [("t4", 1, 1, ("d/f", "d/s"))],
      id="fraction and share together"),
    # a typed L4 pod goes on L4 though T4 is cheaper
    P([whole("d/typed", 1, frozenset({"l4"}))], [T4, L4], [("l4", 1, 1, ("d/typed",))],
      id="typed pod, its type"),
    # whole GPUs are never shared: two 1-GPU pods, two nodes
    P([whole("d/w1", 1), whole("d/w2", 1)], [T4],
      [("t4", 1, 1, ("d/w1",)), ("t4", 1, 1, ("d/w2",))], id="whole GPUs, one node each"),
    # 4-GPU nodes: 2 + 1 whole GPUs and a 3 GiB share fit on one node (2 + 1 + 1 = 4 GPUs)
    P([whole("d/w2", 2), whole("d/w1", 1), share("d/s", 3072)],
      [Offer("t4", 15360, 0.53, gpus_per_node=4)], [("t4", 4, 4, ("d/w2", "d/w1", "d/s"))],
      id="several GPUs per node"),
    # MIG: 9 x 1g.10gb, 7 per A100 -> ceil(9 / 7) = 2 whole GPUs, on a 2-GPU node
    P([Need("d/mig", RequestKind.MIG, frozenset({"a100-80gb"}), count=9,
            mig_profile="1g.10gb")], [T4, Offer("a100-80gb", 81920, 3.43, gpus_per_node=2,
                                                mig_per_gpu={"1g.10gb": 7})],
      [("a100-80gb", 2, 2, ("d/mig",))], id="MIG pod, whole MIG-capable GPUs"),
])
def test_plans(needs: list[Need], offers: list[Offer],
               expected: list[tuple[str, int, int, tuple[str, ...]]]) -> None:
    plan = pack(needs, offers)
    assert summary(plan) == expected
    assert plan.unserved == ()


@pytest.mark.parametrize(("need", "offers", "why"), [
    # 30720 > 15360 (T4) and > 23034 (L4)
    P(share("d/huge", 30720), [T4, L4], "t4 GPUs have 15360 MiB < 30720 MiB; l4 GPUs have "
                                        "23034 MiB < 30720 MiB", id="no type is big enough"),
    # 2 GPUs > 1 GPU per new node
    P(whole("d/two", 2), [T4], "asks 2 GPUs on one node; a new t4 node has 1",
      id="more GPUs than a node has"),
    P(Need("d/mig", RequestKind.MIG, frozenset({"t4"}), count=1, mig_profile="1g.10gb"),
      [T4], "t4 has no MIG profile 1g.10gb", id="MIG on a type without MIG"),
    P(share("d/a100-only", 1024, frozenset({"a100-80gb"})), [T4, L4],
      "no GPU type an autoscaler provides is one the pod accepts", id="no offered type"),
])
def test_unserved(need: Need, offers: list[Offer], why: str) -> None:
    plan = pack([need], offers)
    assert plan.nodes == ()
    assert plan.unserved == ((need.pod, why),)


def test_shapes_group_nodes_by_type_and_gpus() -> None:
    # 3 shares of 10240: 10240 + 10240 > 15360, one T4 each; a typed L4 whole GPU
    plan = pack([share(f"d/s{i}", 10240, frozenset({"t4"})) for i in range(3)]
                + [whole("d/l", 1, frozenset({"l4"}))], [T4, L4])
    assert {k: len(v) for k, v in plan.shapes().items()} == {("t4", 1): 3, ("l4", 1): 1}


def test_deterministic_whatever_the_input_order() -> None:
    needs = [share("d/a", 3072), share("d/b", 3072), fraction("d/c", 250), whole("d/d", 1)]
    assert pack(needs, [T4, L4]) == pack(list(reversed(needs)), [L4, T4])
