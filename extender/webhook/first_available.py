"""Rewrite an untyped GPU claim into ``firstAvailable`` alternatives, cheapest type first
(KEP-4816, GA in 1.36), so DRA itself prefers the cheap GPUs and never takes a protected one.

A pod that asks for GPUs only through ``spec.resourceClaims`` never reaches the extender
(``docs/dra.md``): kube-scheduler's DynamicResources plugin places it alone, first-fit. For such
claims the webhook (``gpu-extender webhook --dra-first-available``) mutates ResourceClaims and
ResourceClaimTemplates: every request ``exactly: {deviceClassName: <the GPU class>}`` without
selectors, with ``ExactCount`` allocation, becomes

    firstAvailable:
      - {name: t4, deviceClassName: gpu.nvidia.com, count: N, selectors: [cel: productName is a T4]}
      - {name: l4, ...}
      ...

one sub-request per unprotected catalog type in price order (at most ``MAX_SUBREQUESTS``, the
API's limit); DRA's Score ranks earlier alternatives higher. Requests with selectors, another
class, ``All`` allocation or ``adminAccess`` are the user's choice and stay as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from extender.catalog import Catalog
from extender.catalog.catalog import normalize_name
from extender.kube.decode_dra import DRA_DRIVER
from extender.webhook.patch import Operation

MAX_SUBREQUESTS = 8
"""``firstAvailable`` holds 1..8 sub-requests (``FirstAvailableDeviceRequestMaxSize``)."""
CLAIM_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate"})


def product_selector(catalog: Catalog, type_index: int) -> str:
    """CEL true for a device whose ``productName``, normalized as the catalog normalizes
    names (lower case, spaces to dashes), is one of the type's names."""
    kind = catalog.types[type_index]
    names = sorted({normalize_name(n) for n in (kind.id, *kind.aliases)})
    attributes = f'device.attributes["{DRA_DRIVER}"]'
    return (f'"productName" in {attributes} && {attributes}.productName.lowerAscii()'
            f'.replace("_", " ").replace(" ", "-") in {orjson.dumps(names).decode()}')


def cost_order(catalog: Catalog, protected: Any) -> list[int]:
    """Unprotected types, cheapest first (ties by id), at most ``MAX_SUBREQUESTS``."""
    usable = [i for i in range(len(catalog.types)) if not bool(protected[i])]
    usable.sort(key=lambda i: (catalog.types[i].price, catalog.types[i].id))
    return usable[:MAX_SUBREQUESTS]


def _untyped(request: Mapping[str, Any], device_class: str) -> bool:
    exactly = request.get("exactly")
    if not isinstance(exactly, Mapping):
        return False
    return exactly.get("deviceClassName") == device_class and not exactly.get("selectors") \
        and exactly.get("allocationMode", "ExactCount") == "ExactCount" \
        and not exactly.get("adminAccess")


def rewrite(obj: Mapping[str, Any], kind: str, catalog: Catalog, protected: Any, *,
            device_class: str = DRA_DRIVER) -> list[Operation]:
    """JSON Patch operations rewriting ``obj``'s untyped GPU requests (none if nothing
    to do)."""
    spec = obj.get("spec")
    base = "/spec"
    if kind == "ResourceClaimTemplate":
        spec = spec.get("spec") if isinstance(spec, Mapping) else None
        base = "/spec/spec"
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    if not isinstance(requests, list):
        return []
    order = cost_order(catalog, protected)
    if not order:
        return []
    ops: list[Operation] = []
    for i, request in enumerate(requests):
        if not isinstance(request, Mapping) or not _untyped(request, device_class):
            continue
        count = request["exactly"].get("count", 1)
        alternatives = [{"name": catalog.types[t].id, "deviceClassName": device_class,
                         "allocationMode": "ExactCount", "count": count,
                         "selectors": [{"cel": {"expression": product_selector(catalog, t)}}]}
                        for t in order]
        replaced = {key: value for key, value in request.items() if key != "exactly"}
        replaced["firstAvailable"] = alternatives
        ops.append({"op": "replace", "path": f"{base}/devices/requests/{i}", "value": replaced})
    return ops
