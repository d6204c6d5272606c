"""``gpu-extender catalog``: every GPU type a pod may ask for, from the effective platform config.

Per type: id, family, aliases (with the ecosystem each spelling comes from), memory, MIG
profiles (memory, slots spanned, legal start slots), price and protection. The document
(``catalog_document``) is generic over ``AcceleratorType``: fields the catalog gains later
(``extra``) are listed as they are.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from extender.catalog.catalog import normalize_name
from extender.catalog.types import AcceleratorType
from extender.errors import did_you_mean
from extender.platform import Platform

WIDTH = 100

# Which ecosystem writes a spelling, read from its shape (the catalog does not record it):
# GFD's nvidia.com/gpu.product is the CUDA device name with '-' (NVIDIA-A100-SXM4-80GB,
# Tesla-T4); GKE accelerator labels and Flyte's accelerator constants are lower-case
# nvidia-<model>; nvidia-smi / trace model names drop the vendor (A100-SXM4-80GB, V100M16).
_ECOSYSTEMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("gke/flyte", re.compile(r"^nvidia-[a-z0-9.-]+$")),
    ("gfd", re.compile(r"^(NVIDIA|Tesla|Quadro)-[A-Za-z0-9.-]+$")),
    ("trace", re.compile(r"^[A-Z][0-9]+M[0-9]+$")),
    ("nvidia-smi", re.compile(r"^[A-Z][0-9A-Z]+(-[A-Za-z0-9]+)+$")),
)


def alias_ecosystem(alias: str) -> str:
    for name, pattern in _ECOSYSTEMS:
        if pattern.match(alias):
            return name
    return "other"


def catalog_document(platform: Platform, only: str | None = None) -> dict[str, Any]:
    """The catalog as JSON-ready data; ``only``: an id, family or alias (exact, normalized).
    Raises ``LookupError`` naming the accepted names when ``only`` matches nothing."""
    catalog = platform.catalog
    protected = platform.protection.protected
    indices = list(range(len(catalog)))
    if only is not None:
        found = catalog.resolve(only)
        if not found:
            names = sorted(catalog.accepted_names())
            raise LookupError(f"--type {only!r} is not a GPU type, family or alias"
                              f"{did_you_mean(only, names)} (accepted: {', '.join(names)})")
        indices = sorted(found)
    types = [_type_document(catalog.types[i], bool(protected[i])) for i in indices]
    families: dict[str, list[str]] = {}
    for accel in catalog.types:
        families.setdefault(normalize_name(accel.family), []).append(accel.id)
    return {"types": types,
            "families": {f: sorted(ids) for f, ids in sorted(families.items())
                         if only is None or any(t["id"] in ids for t in types)},
            "nodeLabelPresets": list(platform.config.node_labels.presets)}


def _type_document(accel: AcceleratorType, protected: bool) -> dict[str, Any]:
    return {
        "id": accel.id,
        "family": accel.family,
        "memoryMiB": accel.memory_mib,
        "price": accel.price,
        "protected": protected,
        "aliases": [{"name": a, "ecosystem": alias_ecosystem(a)} for a in accel.aliases],
        "mig": None if accel.mig is None else {
            "slots": accel.mig.slots,
            "profiles": [{"name": p.name, "resource": p.resource_name,
                          "memoryMiB": p.memory_mib, "slices": p.slices,
                          "starts": list(p.starts)} for p in accel.mig.profiles]},
        "extra": dict(sorted(accel.extra.items())),
    }


def render_catalog(document: dict[str, Any]) -> str:
    """Text, at most ``WIDTH`` columns, in catalog order."""
    lines = [f"{'TYPE':<14} {'FAMILY':<8} {'MEMORY':>9} {'$/GPU-H':>8}  {'PROTECTED':<9}  MIG"]
    for t in document["types"]:
        mig = t["mig"]
        mig_text = f"{len(mig['profiles'])} profiles, {mig['slots']} slots" if mig else "-"
        lines.append(f"{t['id']:<14} {t['family']:<8} {_gib(t['memoryMiB']):>9} "
                     f"{t['price']:>8.2f}  {'yes' if t['protected'] else 'no':<9}  {mig_text}")
        by_ecosystem: dict[str, list[str]] = {}
        for alias in t["aliases"]:
            by_ecosystem.setdefault(alias["ecosystem"], []).append(alias["name"])
        for ecosystem, names in by_ecosystem.items():
            lines += textwrap.wrap(", ".join(names), WIDTH, initial_indent=f"    {ecosystem}: ",
                                   subsequent_indent=" " * (6 + len(ecosystem)),
                                   break_on_hyphens=False)
        for key, value in t["extra"].items():
            lines += textwrap.wrap(f"{value}", WIDTH, initial_indent=f"    {key}: ",
                                   subsequent_indent="      ", break_on_hyphens=False)
        if mig:
            for p in mig["profiles"]:
                lines.append(f"    {p['resource']:<28} {p['memoryMiB']:>6} MiB  spans "
                             f"{p['slices']} slot{'s' if p['slices'] > 1 else ' '}  "
                             f"starts {','.join(map(str, p['starts']))}")
    families = [f"{f} = {' | '.join(ids)}" for f, ids in document["families"].items()
                if len(ids) > 1]
    if families:
        lines.append("")
        lines += textwrap.wrap("; ".join(families), WIDTH, initial_indent="families: ",
                               subsequent_indent="  ", break_on_hyphens=False)
    lines.append("")
    lines.append("A pod names a type with the label gpu-extender.io/accelerator (one name) or "
                 "the annotation")
    lines.append("gpu-extender.io/accelerators (a list); any id, family or alias above matches "
                 "exactly.")
    return "\n".join(lines)


def _gib(mib: int) -> str:
    return f"{mib / 1024:g} GiB" if mib % 1024 == 0 else f"{mib} MiB"
