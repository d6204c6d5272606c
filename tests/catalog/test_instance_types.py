"""The shipped instance-type table: versioned, every entry one catalog type, the families the
issue names all present."""

from __future__ import annotations

from extender.catalog import normalize_name
from extender.catalog.instance_types import INSTANCE_TYPES_VERSION, shipped_instance_types
from extender.platform import Platform


def test_every_entry_names_exactly_one_type_and_a_positive_count(platform: Platform) -> None:
    table = shipped_instance_types()
    assert len(table) > 80
    for name, entry in table.items():
        resolved = platform.catalog.resolve(entry["type"])
        assert resolved is not None and len(resolved) == 1, name
        assert isinstance(entry["count"], int) and entry["count"] >= 1, name


def test_names_are_unique_after_normalization() -> None:
    names = [normalize_name(n) for n in shipped_instance_types()]
    assert len(names) == len(set(names))


def test_the_families_of_each_cloud_are_covered() -> None:
    names = " ".join(shipped_instance_types())
    for family in ("g4dn.", "g5.", "g6.", "g6e.", "gr6.", "p3.", "p3dn.", "p4d.", "p4de.", "p5.",
                   "p5e.", "p5en.", "p6-b200.", "a2-highgpu", "a2-megagpu", "a2-ultragpu",
                   "a3-", "a4-", "g2-standard", "_T4_v3",
                   "_A100_v4", "ND96asr_v4", "_H100_v5"):
        assert family in names, family
    assert INSTANCE_TYPES_VERSION == 1
