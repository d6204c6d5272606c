"""The JSON we persist on pods (``gpu-extender.io/assigned``) and read from nodes
(``gpu-extender.io/gpus``). These annotations are the extender's only persistent state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from extender.jsonobj import json_type, load_object
from extender.model import (
    ASSIGNED_VERSION,
    NODE_GPUS_VERSION,
    Assignment,
    GpuGrant,
    RequestKind,
)
from extender.units import MAX_GPU_INDEX, MAX_GPU_MEMORY_MIB, MAX_GPUS_PER_POD, MAX_MIG_SLOTS


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
    """Parse the ``assigned`` annotation; ``ValueError`` says what is wrong (the field's path,
    the value and what is accepted).

    Every number is bounded like the requests and nodes the decoders read (``extender.units``):
    a value no real GPU has (``vramMiB: 99999999999``, ``slices: 1000000000``) is refused here,
    so nothing downstream (the inventory's int16/int32 arrays, the MIG bit masks) ever sees it.
    """
    if not isinstance(text, str):
        raise ValueError(f"must be a string, not {type(text).__name__}")
    if len(text) > MAX_ANNOTATION_CHARS:
        raise ValueError(f"is {len(text)} characters long (accepted: at most "
                         f"{MAX_ANNOTATION_CHARS})")
    doc = load_object(text, "")  # a JsonObjectError is a ValueError
    if doc.get("version") != ASSIGNED_VERSION:
        raise ValueError(f"version {doc.get('version')!r} is not supported "
                         f"(accepted: {ASSIGNED_VERSION})")
    node = _text(doc, "node", "node", required=True, limit=MAX_NAME_CHARS)
    kind_value = doc.get("kind")
    try:
        kind = RequestKind(str(kind_value) if isinstance(kind_value, str) else "")
    except ValueError:
        raise ValueError(f"kind: {kind_value!r} is not a request kind (accepted: "
                         f"{', '.join(k.value for k in RequestKind)})") from None
    gpus = doc.get("gpus")
    if not isinstance(gpus, list):
        raise ValueError(f"gpus: must be a list, not {json_type(gpus)}")
    if len(gpus) > MAX_GPUS_PER_POD:
        raise ValueError(f"gpus: {len(gpus)} grants (accepted: at most {MAX_GPUS_PER_POD})")
    grants = tuple(_decode_grant(g, f"gpus[{i}]") for i, g in enumerate(gpus))
    return Assignment(node=node, kind=kind, grants=grants,
                      type_id=_text(doc, "type", "type", limit=MAX_NAME_CHARS),
                      generation=_integer(doc, "generation", "generation", 0, 2**63 - 1,
                                          default=0))


MAX_ANNOTATION_CHARS = 64 * 1024
"""Far above what 64 grants encode to (about 100 bytes each)."""
MAX_NAME_CHARS = 253
"""A node name (a DNS subdomain) or a type id."""
MAX_UUID_CHARS = 128
"""``GPU-<36 hex and dashes>`` or ``MIG-<...>``: about 40 characters."""


def _decode_grant(entry: object, path: str) -> GpuGrant:
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: must be an object, not {json_type(entry)}")
    index = _integer(entry, "index", f"{path}.index", 0, MAX_GPU_INDEX - 1)
    vram = _integer(entry, "vramMiB", f"{path}.vramMiB", 0, MAX_GPU_MEMORY_MIB, default=0)
    uuid = entry.get("uuid")
    if uuid is not None and (not isinstance(uuid, str) or len(uuid) > MAX_UUID_CHARS):
        raise ValueError(f"{path}.uuid: {_short(uuid)} must be a string of at most "
                         f"{MAX_UUID_CHARS} characters")
    mig = entry.get("mig")
    profile, start, slices = None, -1, 0
    if mig is not None:
        if not isinstance(mig, dict):
            raise ValueError(f"{path}.mig: must be an object, not {json_type(mig)}")
        profile = _text(mig, "profile", f"{path}.mig.profile", required=True, limit=64)
        start = _integer(mig, "start", f"{path}.mig.start", 0, MAX_MIG_SLOTS - 1)
        slices = _integer(mig, "slices", f"{path}.mig.slices", 1, MAX_MIG_SLOTS - start)
    return GpuGrant(
        index=index,
        vram_mib=vram,
        whole=_flag(entry, "whole", path),
        replica=_flag(entry, "replica", path),
        mig_profile=profile,
        mig_start=start,
        mig_slices=slices,
        uuid=uuid or None,
    )


def _integer(doc: Mapping[str, Any], key: str, path: str, low: int, high: int, *,
             default: int | None = None) -> int:
    value = doc.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{path}: {_short(value)} is not an integer in {low}..{high}")
    return value


def _text(doc: Mapping[str, Any], key: str, path: str, *, required: bool = False,
          limit: int) -> str:
    value = doc.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value) or len(value) > limit:
        raise ValueError(f"{path}: {_short(value)} must be a non-empty string of at most "
                         f"{limit} characters" if required else
                         f"{path}: {_short(value)} must be a string of at most {limit} "
                         "characters")
    return value


def _flag(doc: Mapping[str, Any], key: str, path: str) -> bool:
    value = doc.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{path}.{key}: {_short(value)} must be true or false")
    return value


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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
