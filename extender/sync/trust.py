"""Which of a bound pod's assignment annotations the books count: the owner of a pod can write
its annotations (``kubectl annotate``, or at creation), so none is taken at its word.

- ``assigned`` (what the extender's Binding wrote): the **first** one seen for a UID on its node
  is kept (our own Binding's, when this process bound the pod); a later change is ignored and
  reported, so patching it to ``vramMiB: 1`` frees nothing.
- ``assigned-observed`` (the node agent's correction: which devices the kubelet really gave)
  may move the grants to other devices of the same node, never change their amounts: it counts
  only when it has the same kind and the same amounts (VRAM, whole, replica, MIG profile per
  grant) as the kept ``assigned``, or, without one, when it matches the pod's own request; and
  not when it was already on the pod before the pod was bound (set at creation, before any
  Binding: the owner wrote it).
- An assignment that does not match the pod's own request is never counted (a CPU pod claiming
  eight A100s, a 1 GiB share claiming four whole T4s): the pod's GPUs are then inferred from
  its request, as for a pod another scheduler placed. A pod whose GPU request is *invalid* (not
  absent: a config change may have made a running pod's request unreadable) keeps its first
  ``assigned``: what it really holds must not read free, and nothing can be inferred for it.

This needs no admission webhook: it is the applier's own rule over what the watch shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.kube.annotations import decode_assignment
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_OBSERVED,
    Assignment,
    GpuDevice,
    GpuGrant,
    GpuRequest,
    NodeInfo,
    PodInfo,
    RequestKind,
)


@dataclass(frozen=True)
class Claims:
    """A pod's two assignment annotations, each decoded on its own (``None``: absent or
    malformed; the decoder already reported a malformed one)."""

    assigned: Assignment | None
    observed: Assignment | None
    observed_text: str | None


def claims_of(annotations: Mapping[str, object]) -> Claims:
    return Claims(_decoded(annotations.get(ANNOTATION_ASSIGNED)),
                  _decoded(annotations.get(ANNOTATION_OBSERVED)),
                  _text(annotations.get(ANNOTATION_OBSERVED)))


def _text(raw: object) -> str | None:
    return raw if isinstance(raw, str) and raw else None


def _decoded(raw: object) -> Assignment | None:
    text = _text(raw)
    if text is None:
        return None
    try:
        return decode_assignment(text)
    except ValueError:
        return None


_NOT_THE_REQUEST = (*(f"metadata.annotations[{a}]" for a in (ANNOTATION_ASSIGNED,
                                                             ANNOTATION_OBSERVED)),
                    "invalid pod:")
"""Problems of a decoded pod that are not its GPU request's (``PodDecoder.decode``)."""


def invalid_request(info: PodInfo) -> bool:
    """The pod has a GPU request that could not be decoded (not: it asks for none)."""
    return info.request is None and any(not p.startswith(_NOT_THE_REQUEST)
                                        for p in info.problems)


def mismatch(assignment: Assignment, request: GpuRequest | None,
             node: NodeInfo | None) -> str | None:
    """Why ``assignment`` cannot be what ``request`` was given on ``node`` (``None``: it can).
    ``node`` ``None`` (not known yet): the amounts that depend on a GPU's size go unchecked."""
    if request is None:
        return "the pod asks for no (valid) GPU request, so it holds none"
    if assignment.kind is not request.kind:
        return f"kind {assignment.kind} does not match the pod's request ({request.describe()})"
    grants = assignment.grants
    single = request.kind in (RequestKind.VRAM, RequestKind.FRACTION)
    expected = 1 if single else request.count
    if len(grants) != expected:
        return f"{len(grants)} grant(s) for a request of {request.describe()}"
    if request.kind in (RequestKind.WHOLE, RequestKind.SHARED) and \
            len({g.index for g in grants}) != len(grants):
        return "a GPU is granted twice"
    sizes = {g.index: g for g in node.gpus} if node is not None else {}
    for grant in grants:
        why = _grant_mismatch(grant, request, sizes.get(grant.index))
        if why is not None:
            return f"GPU {grant.index}: {why}"
    return None


def _grant_mismatch(grant: GpuGrant, request: GpuRequest, gpu: GpuDevice | None) -> str | None:
    total = gpu.memory_mib if gpu is not None else None
    replicas = gpu.replicas if gpu is not None else 0
    kind = request.kind
    if kind is RequestKind.MIG:
        return None if grant.mig_profile == request.mig_profile and not grant.whole \
            and not grant.replica else f"not a MIG {request.mig_profile} instance"
    if grant.mig_profile is not None:
        return "a MIG instance for a request that is not MIG"
    if kind is RequestKind.VRAM:
        return None if not grant.whole and not grant.replica and \
            grant.vram_mib == request.vram_mib else \
            f"not a share of {request.vram_mib} MiB"
    if kind is RequestKind.FRACTION:
        if grant.whole or grant.replica or grant.vram_mib < 1:
            return f"not a {request.milli / 1000:g} fraction"
        if total is not None and grant.vram_mib != total * request.milli // 1000:
            return f"{grant.vram_mib} MiB is not {request.milli / 1000:g} of {total} MiB"
        return None
    if kind is RequestKind.SHARED and not grant.replica:
        return "not a time-slice replica"
    if not (grant.whole or grant.replica):
        return "neither a whole GPU nor a replica"
    if total is not None:
        want = total // replicas if grant.replica and replicas > 1 else total
        if grant.vram_mib != want:
            return f"{grant.vram_mib} MiB, not the {want} MiB it spans"
    return None


def same_amounts(a: Assignment, b: Assignment) -> bool:
    """The same kind and the same amounts per grant: only which devices may differ (a whole
    GPU's VRAM is that GPU's, checked against the node by ``mismatch``)."""
    return a.kind is b.kind and sorted(map(_amount, a.grants)) == sorted(map(_amount, b.grants))


def _amount(grant: GpuGrant) -> tuple[int, bool, bool, str, int]:
    return (0 if grant.whole else grant.vram_mib, grant.whole, grant.replica,
            grant.mig_profile or "", grant.mig_slices)
