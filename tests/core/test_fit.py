"""Table-driven tests of ``core.fit``: one row per situation, the arithmetic in the comments.

Each case builds a small cluster, places earlier pods with the core (``place``), and fits one
request on one node. It checks the reason code, the verdict, the numbers in the message, and
that the naive reference agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from extender.core.fit import fit
from extender.core.reasons import Reason, format_reason, verdict_of
from extender.model import GpuRequest, NodeInfo, Verdict
from tests.core.helpers import catalog, gpu, inventory, node, place, placement, reference, request


@dataclass
class Case:
    nodes: list[NodeInfo]
    req: GpuRequest
    code: Reason
    message: tuple[str, ...] = ()
    """Fragments the message must contain (the numbers)."""
    before: list[tuple[GpuRequest, str]] = field(default_factory=list)
    """Pods placed first: (request, node)."""
    namespace: str = ""
    target: str = "n"
    cpu: int = 0
    memory: int = 0
    check_cpu_memory: bool = False


def vram(mib: int, **kw: object) -> GpuRequest:
    return request("vram", vram=mib, **kw)  # type: ignore[arg-type]


def whole(count: int = 1, **kw: object) -> GpuRequest:
    return request("whole", count, **kw)  # type: ignore[arg-type]


def mig(profile: str, count: int = 1, types: tuple[str, ...] = ("a100-80gb",)) -> GpuRequest:
    return request("mig", count, mig=profile, types=types)


def fraction(milli: int, **kw: object) -> GpuRequest:
    return request("fraction", milli=milli, **kw)  # type: ignore[arg-type]


CASES = [
    # -- VRAM shares
    pytest.param(Case([node("n", "t4", 1)], vram(4096), Reason.FITS,
                      before=[(vram(4096), "n")] * 3),
                 # 3 * 4096 = 12288 held; 16384 - 12288 = 4096 >= 4096
                 id="the fourth 4Gi share fits on a 16384 MiB T4: 3*4096 + 4096 = 16384"),
    pytest.param(Case([node("n", "t4", 1)], vram(4096), Reason.VRAM_BUSY,
                      ("1/1 accepted GPUs lack free VRAM", "need 4096 MiB", "best free 0 MiB"),
                      before=[(vram(4096), "n")] * 4),
                 # 4 * 4096 = 16384 <= 16384 held: nothing left
                 id="4 x 4Gi on a 16384 MiB T4: 4*4096 = 16384, the fifth needs another GPU"),
    pytest.param(Case([node("n", "t4", 2)], vram(10000), Reason.VRAM_BUSY,
                      ("2/2 accepted GPUs", "need 10000 MiB", "best free 6384 MiB"),
                      before=[(vram(10000), "n"), (vram(10000), "n")]),
                 # each T4 keeps 16384 - 10000 = 6384 < 10000: split VRAM does not add up
                 id="two half-empty T4s do not host 10000 MiB: best free 16384-10000 = 6384"),
    pytest.param(Case([node("n", "t4", 1)], vram(20000), Reason.TOO_LITTLE_VRAM,
                      ("largest accepted GPU has 16384 MiB", "needs 20000 MiB")),
                 # 20000 > 16384 even when empty: unresolvable, no eviction helps
                 id="20000 MiB never fits a 16384 MiB T4: unresolvable"),
    pytest.param(Case([node("n", gpus=[gpu("t4", 0), gpu("l40s", 1)])], vram(40000),
                      Reason.FITS),
                 # the L40S has 49152 >= 40000; the T4 alone would be too small
                 id="a mixed node fits a share its largest GPU covers: 49152 >= 40000"),
    # -- fractions
    pytest.param(Case([node("n", "t4", 1)], fraction(500), Reason.FRACTION_BUSY,
                      ("need 500/1000", "best free 0/1000"),
                      before=[(fraction(500), "n"), (fraction(500), "n")]),
                 # 16384 * 500 // 1000 = 8192 per share; two shares hold 16384: none left
                 id="two 0.5 shares fill a T4: 2 * (16384*500//1000) = 16384, a third waits"),
    pytest.param(Case([node("n", "t4", 1)], fraction(470), Reason.FITS,
                      before=[(fraction(530), "n")]),
                 # 16384*530//1000 = 8683 held; 7701 free >= 16384*470//1000 = 7700
                 id="0.53 + 0.47 fit one T4: shares round down so they always add up"),
    # -- whole GPUs
    pytest.param(Case([node("n", "t4", 1)], whole(2), Reason.TOO_FEW_GPUS,
                      ("node has 1 GPU(s) of accepted types", "needs 2 distinct GPUs")),
                 id="2 whole GPUs on a 1-GPU node: unresolvable, 1 < 2"),
    pytest.param(Case([node("n", "t4", 2)], whole(2), Reason.GPUS_BUSY,
                      ("1/2 accepted GPUs in use", "needs 2 free"),
                      before=[(vram(1024), "n")]),
                 # a 1024 MiB share makes GPU 0 not whole: 2 - 1 = 1 free < 2
                 id="a small share blocks a whole GPU: 2 GPUs, 1 in use, 2 needed"),
    pytest.param(Case([node("n", "t4", 2)], whole(1), Reason.FITS, before=[(whole(1), "n")]),
                 id="one whole GPU taken of two leaves one: 2 - 1 = 1 >= 1"),
    pytest.param(Case([node("n", "l4", 1, replicas=4)], whole(1), Reason.FITS,
                      before=[(whole(1), "n")] * 3),
                 # a time-sliced GPU hands out replicas: 4 - 3 = 1 left
                 id="a whole-GPU pod takes a time-slice replica: 3 of 4 used, 1 left"),
    pytest.param(Case([node("n", "l4", 1, replicas=4)], whole(1), Reason.GPUS_BUSY,
                      ("1/1 accepted GPUs in use",), before=[(whole(1), "n")] * 4),
                 id="all 4 replicas of a time-sliced L4 used: the fifth pod waits"),
    pytest.param(Case([node("n", "a100-80gb", 2, mig="dynamic")], whole(1),
                      Reason.MIG_PARTITIONED,
                      ("node's 2 accepted GPU(s) are all MIG-partitioned",),
                      namespace="research"),
                 id="whole GPUs never come from MIG-partitioned GPUs: unresolvable"),
    pytest.param(Case([node("n", "a100-80gb", 2, mig="dynamic")], fraction(500),
                      Reason.MIG_PARTITIONED, ("MIG-partitioned",), namespace="research"),
                 id="a fraction on MIG-partitioned GPUs says so (not 'no MIG profile')"),
    pytest.param(Case([node("n", "t4", 2, healthy=False)], whole(1), Reason.UNHEALTHY,
                      ("node has 2 unhealthy accepted GPU(s)", "0 healthy",
                       "needs 1")),
                 id="unhealthy GPUs never count: 2 unhealthy, 0 healthy, 1 needed"),
    pytest.param(Case([node("n", gpus=[gpu("t4", 0), gpu("t4", 1, healthy=False)])], whole(2),
                      Reason.UNHEALTHY, ("node has 1 unhealthy", "1 healthy", "needs 2")),
                 id="2 GPUs asked, 1 of 2 unhealthy: 1 healthy < 2"),
    # -- time-slice replicas
    pytest.param(Case([node("n", "t4", 2)], request("shared", 1), Reason.NOT_TIME_SLICED,
                      ("0 GPU(s) of accepted types time-sliced", "needs 1")),
                 id="a replica request on GPUs without time slicing: unresolvable"),
    pytest.param(Case([node("n", gpus=[gpu("l4", 0, replicas=2, shared=True),
                                       gpu("l4", 1, replicas=2, shared=True)])],
                      request("shared", 2), Reason.REPLICAS_BUSY,
                      ("node has 1 time-sliced GPU(s) with a free replica", "needs 2"),
                      before=[(request("shared", 1), "n"), (request("shared", 1), "n")]),
                 # both pods packed GPU 0 (fewest free replicas first): GPU 1 alone has one
                 id="2 replicas on 2 distinct GPUs: GPU 0 is full, only GPU 1 has one"),
    # -- MIG
    pytest.param(Case([node("n", "a100-80gb", 1, mig="dynamic")], mig("1g.10gb"), Reason.FITS,
                      before=[(mig("1g.10gb"), "n")] * 6),
                 # 1g.10gb spans 1 slot, legal starts 0..6: 6 used, slot 0 left
                 id="the seventh 1g.10gb fits an A100-80GB: starts 0..6, six taken"),
    pytest.param(Case([node("n", "a100-80gb", 1, mig="dynamic")], mig("1g.10gb"),
                      Reason.MIG_BUSY, ("0 free placement(s)", "needs 1"),
                      before=[(mig("1g.10gb"), "n")] * 7),
                 # slot 7 is memory only: no 1g.10gb may start there
                 id="seven 1g.10gb fill slots 0..6 of an A100-80GB: the eighth does not fit"),
    pytest.param(Case([node("n", "a100-80gb", 1, mig="dynamic")], mig("1g.10gb", 8),
                      Reason.TOO_FEW_MIG_INSTANCES, ("at most 7 instance(s)", "needs 8")),
                 id="8 x 1g.10gb on one A100-80GB: 7 starts < 8, unresolvable"),
    pytest.param(Case([node("n", "a100-80gb", 1)], mig("1g.10gb"), Reason.NO_MIG_PROFILE,
                      ("partitioned for this MIG profile",)),
                 id="a MIG pod on an unpartitioned A100: no instances, unresolvable"),
    pytest.param(Case([node("n", "a100-80gb", 1, mig="dynamic")], mig("3g.40gb"),
                      Reason.MIG_BUSY, ("0 free placement(s)",),
                      before=[(mig("1g.10gb"), "n")] * 2 + [(mig("3g.40gb"), "n")]),
                 # 1g at 6 and 5 break start 4 (slots 4..7); the first 3g took start 0
                 id="two 1g.10gb at 6 and 5 plus a 3g.40gb at 0 leave no 3g start (0 or 4)"),
    pytest.param(Case([node("n", "a100-80gb", 1, mig=(("3g.40gb", 0), ("1g.10gb", 4),
                                                      ("1g.10gb", 5)))],
                      mig("1g.10gb", 3), Reason.TOO_FEW_MIG_INSTANCES,
                      ("at most 2 instance(s)", "needs 3")),
                 # a static layout offers exactly its instances: two 1g.10gb
                 id="a static layout has exactly its instances: 2 x 1g.10gb < 3"),
    pytest.param(Case([node("n", "a30", 1, mig="dynamic")], mig("4g.24gb", 1, ("a30",)),
                      Reason.FITS),
                 # the A30 has 4 real slots (4..7 are phantoms): 4g.24gb spans 0..3
                 id="an A30 has 4 slots: a 4g.24gb spans all of them"),
    # -- types and protection
    pytest.param(Case([node("n", "t4", 1)], whole(1, types=["a100"]), Reason.TYPE_MISMATCH,
                      ("node has t4 GPUs", "accepts other types")),
                 id="a pod typed a100 on a T4 node: type mismatch, unresolvable"),
    pytest.param(Case([node("n", "t4", 1)], whole(1, excluded=["t4"]), Reason.TYPE_MISMATCH),
                 id="an untyped pod excluding t4 on a T4 node: type mismatch"),
    pytest.param(Case([node("n", "a100-80gb", 1)], whole(1), Reason.PROTECTED,
                      ("a100-80gb is protected", "gpu-extender.io/accelerator")),
                 id="untyped pod vs a100 node: PROTECTED, unresolvable"),
    pytest.param(Case([node("n", "a100-80gb", 1)], whole(1, types=["a100"]), Reason.FITS),
                 id="the same pod typed a100 (the family) fits the A100-80GB"),
    pytest.param(Case([node("n", "a100-80gb", 1)], whole(1), Reason.FITS,
                      namespace="research"),
                 id="an untyped pod in namespace research (allowance a100) fits an A100"),
    pytest.param(Case([node("n", "h100-80gb", 1)], whole(1), Reason.PROTECTED,
                      ("h100-80gb is protected",), namespace="research"),
                 id="research's allowance names a100 only: an H100 stays protected"),
    pytest.param(Case([node("n", "h100-80gb", 1)], whole(1), Reason.FITS,
                      namespace="platform"),
                 id="namespace platform (allowance *) may use every protected type"),
    pytest.param(Case([node("n", "unknown", 1)], whole(1), Reason.TYPE_MISMATCH,
                      ("node has unknown GPUs",), namespace="platform"),
                 id="a GPU of unknown model is never used by an untyped pod, even with *"),
    pytest.param(Case([node("n", gpus=[gpu("t4", 0), gpu("a100-80gb", 1)])], whole(2),
                      Reason.TOO_FEW_GPUS, ("node has 1 GPU(s)", "needs 2")),
                 # the A100 on the node does not count for an untyped pod
                 id="on a mixed T4 + A100 node an untyped pod counts only the T4: 1 < 2"),
    pytest.param(Case([node("n", gpus=[gpu("t4", 0), gpu("a100-80gb", 1)])],
                      whole(1, types=["a100"]), Reason.GPUS_BUSY,
                      before=[(whole(1, types=["a100"]), "n")]),
                 id="a typed pod counts only its type on a mixed node: the A100 is taken"),
    # -- nodes and CPU/memory
    pytest.param(Case([node("n", count=0)], whole(1), Reason.NO_GPUS, ("no GPUs",)),
                 id="a node without GPUs: unresolvable"),
    pytest.param(Case([node("n", "t4", 1, cpu=4000)], whole(1), Reason.CPU_BUSY,
                      ("4000m free", "needs 8000m"), cpu=8000, check_cpu_memory=True),
                 id="with CPU checks on, 8000m asked on a node with 4000m free"),
    pytest.param(Case([node("n", "t4", 1, memory=1024)], whole(1), Reason.MEMORY_BUSY,
                      ("1024 MiB free", "needs 2048 MiB"), memory=2048,
                      check_cpu_memory=True),
                 id="with memory checks on, 2048 MiB asked on a node with 1024 MiB free"),
    pytest.param(Case([node("n", "t4", 1, cpu=4000)], whole(1), Reason.FITS, cpu=8000),
                 id="without CPU checks (kube-scheduler does them) the same pod fits"),
]


@pytest.mark.parametrize("case", CASES)
def test_fit(case: Case) -> None:
    inv = inventory(*case.nodes)
    for req, name in case.before:
        place(inv, req, name, namespace="platform")
    snap = inv.snapshot()
    row = snap.node_index[case.target]
    preq = placement(case.req, case.namespace, case.cpu, case.memory)
    result = fit(snap, preq, np.array([row], dtype=np.int64),
                 check_cpu_memory=case.check_cpu_memory)
    assert Reason(int(result.code[0])) is case.code
    assert int(result.verdict[0]) == verdict_of(case.code).value
    message = result.messages(snap)[0]
    for fragment in case.message:
        assert fragment in message, message
    naive = reference().fit_node(snap, case.req, row, namespace=case.namespace,
                                 cpu_milli=case.cpu, memory_mib=case.memory,
                                 check_cpu_memory=case.check_cpu_memory)
    assert (naive.code, naive.params) == (int(result.code[0]),
                                         tuple(int(v) for v in result.params[0]))


VERDICTS = [
    pytest.param(Reason.FITS, Verdict.FITS, id="fits is FITS"),
    pytest.param(Reason.TYPE_MISMATCH, Verdict.UNRESOLVABLE,
                 id="a wrong type can never fit: unresolvable"),
    pytest.param(Reason.MIG_PARTITIONED, Verdict.UNRESOLVABLE,
                 id="a partitioned GPU never serves a whole pod: unresolvable"),
    pytest.param(Reason.UNHEALTHY, Verdict.UNRESOLVABLE,
                 id="unhealthy GPUs need a repair, not an eviction: unresolvable"),
    pytest.param(Reason.GPUS_BUSY, Verdict.UNSCHEDULABLE,
                 id="GPUs in use may free up: unschedulable"),
    pytest.param(Reason.MIG_BUSY, Verdict.UNSCHEDULABLE,
                 id="MIG slots in use may free up: unschedulable"),
]


@pytest.mark.parametrize(("code", "verdict"), VERDICTS)
def test_reason_verdicts(code: Reason, verdict: Verdict) -> None:
    assert verdict_of(code) is verdict


def test_every_reason_has_a_message() -> None:
    for code in Reason:
        text = format_reason(catalog(), code, 1, 2, 3)
        assert (text == "") is (code is Reason.FITS)


def test_fit_on_many_nodes_gives_each_row_its_verdict_and_message() -> None:
    # 3 fitting T4 nodes, 2 A100 nodes (protected for an untyped pod), 1 full T4 node
    nodes = [node(f"t{i}", "t4", 1) for i in range(4)] + \
        [node(f"a{i}", "a100-80gb", 1) for i in range(2)]
    inv = inventory(*nodes)
    place(inv, whole(1), "t3")
    snap = inv.snapshot()
    result = fit(snap, placement(whole(1)), snap.valid_rows())
    assert [Verdict(v) for v in result.verdict.tolist()] == \
        [Verdict.FITS] * 3 + [Verdict.UNSCHEDULABLE] + [Verdict.UNRESOLVABLE] * 2
    messages = result.messages(snap)
    assert messages[:3] == ["", "", ""]
    assert messages[3] == "node has 1/1 accepted GPUs in use; the pod needs 1 free"
    assert messages[4] == messages[5] and "protected" in messages[4]
