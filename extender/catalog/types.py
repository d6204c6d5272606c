"""Typed, frozen description of GPU types (what the catalog and the platform config hold)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile of one GPU type.

    ``slices`` is how many consecutive memory slots the instance spans; it may start only at a
    slot in ``starts`` (NVML ``-lgipp`` placements), and instances never overlap.
    """

    name: str
    memory_mib: int
    slices: int
    starts: tuple[int, ...]

    @property
    def resource_name(self) -> str:
        """The device plugin's mixed-strategy resource name (``nvidia.com/mig-1g.10gb``)."""
        return "nvidia.com/mig-" + self.name

    @property
    def start_mask(self) -> int:
        """Bit ``s`` set for every legal start slot ``s``."""
        mask = 0
        for start in self.starts:
            mask |= 1 << start
        return mask


@dataclass(frozen=True)
class MigGeometry:
    """How a GPU type can be partitioned: its memory slots and its profiles."""

    slots: int
    profiles: tuple[MigProfile, ...]

    def profile(self, name: str) -> MigProfile | None:
        for profile in self.profiles:
            if profile.name == name:
                return profile
        return None


@dataclass(frozen=True)
class AcceleratorType:
    """One canonical GPU type.

    ``price`` is USD per GPU-hour; ``protected`` keeps untyped pods away from it.
    """

    id: str
    family: str
    memory_mib: int
    price: float
    protected: bool
    aliases: tuple[str, ...] = ()
    mig: MigGeometry | None = None
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
