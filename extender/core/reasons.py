"""Why a node does not fit: a closed set of codes, each with its verdict and a message template
filled with numbers. Messages are formatted once per distinct (code, numbers) group, not once
per node: a 10,000-node filter answer has few distinct reasons.

Every message starts with "node" (or kube's own "insufficient"): kube-scheduler puts the count
of nodes before it ("0/4 nodes are available: 1 node has 1/4 accepted GPUs in use; ..."), so a
message that began with a number would read "1 1/4 ..."."""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.model import RESOURCE_GPU, RESOURCE_GPU_SHARED, GpuRequest, RequestKind, Verdict


class Reason(IntEnum):
    FITS = 0
    # unresolvable: no eviction makes room
    UNKNOWN_NODE = 1
    NO_GPUS = 2
    TYPE_MISMATCH = 3
    PROTECTED = 4
    TOO_FEW_GPUS = 5
    TOO_LITTLE_VRAM = 6
    NOT_TIME_SLICED = 7
    NO_MIG_PROFILE = 8
    TOO_FEW_MIG_INSTANCES = 9
    UNHEALTHY = 10
    MIG_PARTITIONED = 11
    BOUND_ELSEWHERE = 12
    """A retried cycle of a pod whose Binding went through: only its node can host it (never
    produced by ``fit``: the filter answers such a pod from its holding)."""
    NO_HANDOFF = 13
    DRA_MANAGED = 14
    # unschedulable: full now
    GPUS_BUSY = 20
    VRAM_BUSY = 21
    REPLICAS_BUSY = 22
    MIG_BUSY = 23
    CPU_BUSY = 24
    MEMORY_BUSY = 25
    FRACTION_BUSY = 26


FITS_CODE = int(Reason.FITS)
"""``Reason.FITS`` as a plain int, for comparisons with a code array: NumPy compares an array
with an ``IntEnum`` member about five times slower (4.8 against 1.0 us for 1,000 codes), as an
object it must first convert."""


def verdict_of(code: int) -> Verdict:
    if code == Reason.FITS:
        return Verdict.FITS
    return Verdict.UNRESOLVABLE if code < Reason.GPUS_BUSY else Verdict.UNSCHEDULABLE


VERDICT_BY_CODE = np.array([verdict_of(c).value for c in range(32)], dtype=np.int8)


class CodedRows:
    """Rows that carry one ``Reason`` code each (``FitResult``, ``scheduling.Evaluation``):
    which fit, and their ``Verdict`` values."""

    code: npt.NDArray[np.int8]

    @property
    def fits(self) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = self.code == FITS_CODE
        return out

    @property
    def verdict(self) -> npt.NDArray[np.int8]:
        """(n,) ``Verdict`` values."""
        out: npt.NDArray[np.int8] = VERDICT_BY_CODE[self.code]
        return out

class Numbers(NamedTuple):
    """The numbers of one reason's message: the columns of ``FitResult.params``, one meaning
    each (0 where a reason has none).

    ``have``: what the node has that the message is about (GPUs, instances or placements that
    count, the largest or best free MiB or thousandths, free millicores or MiB; for the type
    reasons the lowest catalog index among the node's types); ``among``: how many it is
    counted among (the candidate GPUs, the healthy ones; for the type reasons the highest
    catalog index); ``need``: what the pod needs (GPUs, instances, MiB, millicores,
    thousandths)."""

    have: int = 0
    among: int = 0
    need: int = 0


HAVE, AMONG, NEED = range(3)
"""Column of each ``Numbers`` field in a ``(n, 3)`` params array."""

_TEMPLATES: dict[Reason, Callable[[Catalog, Numbers], str]] = {
    Reason.UNKNOWN_NODE: lambda cat, n: "node is not in the GPU inventory (yet)",
    Reason.NO_GPUS: lambda cat, n: "node has no GPUs",
    Reason.TYPE_MISMATCH: lambda cat, n:
        f"node has {_types(cat, n.have, n.among)} GPUs; the pod accepts other types",
    Reason.PROTECTED: lambda cat, n:
        f"node's {_types(cat, n.have, n.among)} is protected: untyped GPU pods may not use it "
        "(name the type in label gpu-extender.io/accelerator, or ask for a namespace "
        "allowance)",
    Reason.TOO_FEW_GPUS: lambda cat, n:
        f"node has {n.have} GPU(s) of accepted types; the pod needs {n.need} distinct GPUs",
    Reason.TOO_LITTLE_VRAM: lambda cat, n:
        f"node's largest accepted GPU has {n.have} MiB VRAM; the pod needs {n.need} MiB",
    Reason.NOT_TIME_SLICED: lambda cat, n:
        f"node has {n.have} GPU(s) of accepted types time-sliced as nvidia.com/gpu.shared; "
        f"the pod needs {n.need}",
    Reason.NO_MIG_PROFILE: lambda cat, n:
        "node has no accepted GPU partitioned for this MIG profile",
    Reason.TOO_FEW_MIG_INSTANCES: lambda cat, n:
        f"node can hold at most {n.have} instance(s) of this MIG profile; the pod needs "
        f"{n.need}",
    Reason.MIG_PARTITIONED: lambda cat, n:
        f"node's {n.have} accepted GPU(s) are all MIG-partitioned; only MIG instances may use "
        "them",
    Reason.BOUND_ELSEWHERE: lambda cat, n:
        "node is not the pod's: it is already bound to another node (its Binding went "
        "through)",
    Reason.NO_HANDOFF: lambda cat, n:
        "node's pool cannot hand a VRAM share or fraction to a container (handoff: none; "
        "on GKE no NVIDIA runtime reads it): ask nvidia.com/gpu: 1 on a time-sharing pool "
        "instead",
    Reason.DRA_MANAGED: lambda cat, n:
        "node's GPUs are DRA devices (ResourceSlices of gpu.nvidia.com): only whole GPUs, "
        "asked as nvidia.com/gpu through a DeviceClass with extendedResourceName, are "
        "placed there; VRAM shares, fractions, MIG and time-slices are not",
    Reason.UNHEALTHY: lambda cat, n:
        f"node has {n.have} unhealthy accepted GPU(s); {n.among} healthy, the pod needs "
        f"{n.need}",
    Reason.GPUS_BUSY: lambda cat, n:
        f"node has {n.have}/{n.among} accepted GPUs in use; the pod needs {n.need} free",
    Reason.VRAM_BUSY: lambda cat, n:
        f"node's {n.among}/{n.among} accepted GPUs lack free VRAM: need {n.need} MiB, best "
        f"free {n.have} MiB",
    Reason.REPLICAS_BUSY: lambda cat, n:
        f"node has {n.have} time-sliced GPU(s) with a free replica; the pod needs {n.need}",
    Reason.MIG_BUSY: lambda cat, n:
        f"node has {n.have} free placement(s) for this MIG profile; the pod needs {n.need}",
    Reason.FRACTION_BUSY: lambda cat, n:
        f"node's {n.among}/{n.among} accepted GPUs lack a free share: need {n.need}/1000 of a "
        f"GPU, best free {n.have}/1000",
    Reason.CPU_BUSY: lambda cat, n:
        f"insufficient cpu: {n.have}m free, the pod needs {n.need}m",
    Reason.MEMORY_BUSY: lambda cat, n:
        f"insufficient memory: {n.have} MiB free, the pod needs {n.need} MiB",
}


def _types(catalog: Catalog, low: int, high: int) -> str:
    if low == high:
        return catalog.id_of(low)
    return f"{catalog.id_of(low)}..{catalog.id_of(high)} (mixed)"


def format_reasons(catalog: Catalog, codes: npt.NDArray[np.int8],
                   params: npt.NDArray[np.int64]) -> list[str]:
    """One message per node; formatting is done once per distinct (code, params) row.

    ``codes``: (n,) int8; ``params``: (n, 3) int64, columns as ``Numbers``.
    """
    if len(codes) == 0:
        return []
    keys = np.concatenate([codes[:, None].astype(np.int64), params], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    texts = [_TEMPLATES[Reason(int(k[0]))](catalog, Numbers(int(k[1]), int(k[2]), int(k[3])))
             if int(k[0]) != Reason.FITS else "" for k in unique]
    return [texts[i] for i in inverse.reshape(-1)]


def format_reason(catalog: Catalog, code: int, have: int = 0, among: int = 0,
                  need: int = 0) -> str:
    """The message of ``code`` with the numbers of one params row (``Numbers``' columns)."""
    numbers = Numbers(have, among, need)
    return _TEMPLATES[Reason(code)](catalog, numbers) if code != Reason.FITS else ""


POD_DEPENDENT = frozenset({Reason.TYPE_MISMATCH, Reason.TOO_FEW_GPUS})
"""Codes whose message names what the pod accepts (so it is not the same for every pod)."""


def format_reason_for(catalog: Catalog, request: GpuRequest, code: int,
                      *params: int) -> str:
    """``format_reason`` with what the pod asked for, so a person can act on it: "node has t4
    GPUs; the pod accepts a100-80gb only (label gpu-extender.io/accelerator)". ``params``:
    one params row (``Numbers``' columns)."""
    numbers = Numbers(*params)
    if code == Reason.TYPE_MISMATCH:
        accepted = (set(range(len(catalog))) if request.types is None
                    else set(request.types)) - set(request.excluded)
        source = f" ({_source(request)})" if request.type_source or request.excluded else ""
        return (f"node has {_types(catalog, numbers.have, numbers.among)} GPUs; the pod accepts "
                f"{catalog.describe(accepted) or 'no type'} only{source}")
    if code == Reason.TOO_FEW_GPUS and request.kind is RequestKind.WHOLE and numbers.have == 0:
        # For nvidia.com/gpu, a node whose accepted GPUs are neither MIG-partitioned (an
        # earlier check) nor capable has them all time-sliced as nvidia.com/gpu.shared.
        return (f"node's accepted GPUs are time-sliced under {RESOURCE_GPU_SHARED}; the pod "
                f"asks {RESOURCE_GPU} (ask {RESOURCE_GPU_SHARED}: {numbers.need} for a replica)")
    return format_reason(catalog, code, *params)


def _source(request: GpuRequest) -> str:
    source = request.type_source
    for prefix, word in (("metadata.labels[", "label "), ("metadata.annotations[", "annotation ")):
        if source.startswith(prefix) and source.endswith("]") and " and " not in source:
            source = word + source[len(prefix):-1]
    if request.excluded and not request.type_source:
        return "gpu-extender.io/exclude-accelerators or a NotIn node affinity"
    return source
