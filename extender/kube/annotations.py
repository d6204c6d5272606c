"""The JSON we persist on pods (``gpu-extender.io/assigned``) and read from nodes
(``gpu-extender.io/gpus``). These annotations are the extender's only persistent state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from extender.model import (
    ASSIGNED_VERSION,
    NODE_GPUS_VERSION,
    Assignment,
    GpuGrant,
    RequestKind,
)


def encode_assignment(assignment: Assignment) -> str:
    """Compact JSON for the ``assigned`` annotation."""
    gpus = []
    for grant in assignment.grants:
        entry: dict[str, Any] = {"index": grant.index, "vramMiB": grant.vram_mib}
        if grant.uuid:
            entry["uuid"] = grant.uuid
        if grant.whole:
            entry["whole"] = True
        if grant.replica:
            entry["replica"] = True
        if grant.mig_profile:
            entry["mig"] = {"profile": grant.mig_profile, "start": grant.mig_start,
                            "slices": grant.mig_slices}
        gpus.append(entry)
    doc = {
        "version": ASSIGNED_VERSION,
        "node": assignment.node,
        "kind": str(assignment.kind),
        "type": assignment.type_id,
        "generation": assignment.generation,
        "gpus": gpus,
    }
    return orjson.dumps(doc).decode()


def decode_assignment(text: str) -> Assignment:
    """Parse the ``assigned`` annotation; ``ValueError`` says what is wrong."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ValueError("must be a JSON object")
    if doc.get("version") != ASSIGNED_VERSION:
        raise ValueError(f"version {doc.get('version')!r} is not supported "
                         f"(accepted: {ASSIGNED_VERSION})")
    try:
        kind = RequestKind(doc["kind"])
        grants = tuple(_decode_grant(g) for g in doc["gpus"])
        return Assignment(node=str(doc["node"]), kind=kind, grants=grants,
                          type_id=str(doc.get("type", "")),
                          generation=int(doc.get("generation", 0)))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a grant not an object
        raise ValueError(f"malformed: {exc!r}") from exc


def _decode_grant(entry: Mapping[str, Any]) -> GpuGrant:
    mig = entry.get("mig") or {}
    index = int(entry["index"])
    vram = int(entry.get("vramMiB", 0))
    if index < 0 or vram < 0:
        raise ValueError("index and vramMiB must be >= 0")
    return GpuGrant(
        index=index,
        vram_mib=vram,
        whole=bool(entry.get("whole", False)),
        replica=bool(entry.get("replica", False)),
        mig_profile=mig.get("profile"),
        mig_start=int(mig.get("start", -1)),
        mig_slices=int(mig.get("slices", 0)),
        uuid=entry.get("uuid"),
    )


def visible_devices(assignment: Assignment) -> str:
    """What a container should get as ``NVIDIA_VISIBLE_DEVICES`` (read by the NVIDIA container
    runtime on the host): the GPUs' UUIDs when every grant has one (the node agent publishes
    them), else the host's physical indices (``"0,3"``). Not ``CUDA_VISIBLE_DEVICES``: inside
    a container CUDA numbers the GPUs it was given from 0, so host indices name the wrong GPU.
    """
    uuids = []
    for grant in assignment.grants:
        if not grant.uuid:
            return ",".join(str(i) for i in assignment.gpu_indices)
        if grant.uuid not in uuids:
            uuids.append(grant.uuid)
    return ",".join(uuids)


def node_gpus_document(gpus: list[dict[str, Any]]) -> str:
    """Encode a node's GPU list (what the node agent publishes)."""
    return orjson.dumps({"version": NODE_GPUS_VERSION, "gpus": gpus}).decode()
