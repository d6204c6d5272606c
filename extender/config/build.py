"""Raw (validated) accelerator entries -> typed ``AcceleratorType``."""

from __future__ import annotations

from typing import Any

from extender.catalog.types import AcceleratorType, MigGeometry, MigProfile


def build_accelerator(entry: dict[str, Any]) -> AcceleratorType:
    """Typed accelerator from a validated raw entry."""
    mig = entry.get("mig")
    geometry = None
    if mig:
        geometry = MigGeometry(
            slots=int(mig["slots"]),
            profiles=tuple(
                MigProfile(
                    name=p["name"],
                    memory_mib=int(p["memoryMiB"]),
                    slices=int(p["slices"]),
                    starts=tuple(sorted(int(s) for s in p["starts"])),
                )
                for p in mig.get("profiles", [])
            ),
        )
    return AcceleratorType(
        id=entry["id"],
        family=entry["family"],
        memory_mib=int(entry["memoryMiB"]),
        price=float(entry["price"]),
        protected=bool(entry["protected"]),
        aliases=tuple(entry.get("aliases", [])),
        mig=geometry,
    )
