"""MIG geometry and per-type tables against the NVIDIA tables (anchors.md section 4.1), and the
extra ``unknown`` type index."""

from __future__ import annotations

import numpy as np
import pytest

from extender.catalog import Catalog

P = pytest.param

# Start masks: bit s set for every legal start slot s.
ALL7 = 0b0111_1111  # {0,1,2,3,4,5,6} = 127
EVEN4 = 0b0101_0101  # {0,2,4,6} = 85
EVEN3 = 0b0001_0101  # {0,2,4} = 21
HALVES = 0b0001_0001  # {0,4} = 17
FIRST = 0b0000_0001  # {0} = 1

# (type, profile, (memory MiB, slices, starts)); "-lgipp" prints these as {starts}:slices.
NVIDIA_TABLES = [
    # A100-SXM4/PCIe-40GB: MIG guide -lgipp and go-nvml a100 mocks
    ("a100-40gb", "1g.5gb", (4864, 1, (0, 1, 2, 3, 4, 5, 6))),
    ("a100-40gb", "1g.10gb", (9856, 2, (0, 2, 4, 6))),  # NVML places it on 2 slices, not 1/8
    ("a100-40gb", "2g.10gb", (9856, 2, (0, 2, 4))),
    ("a100-40gb", "3g.20gb", (19968, 4, (0, 4))),
    ("a100-40gb", "4g.20gb", (19968, 4, (0,))),
    ("a100-40gb", "7g.40gb", (40192, 8, (0,))),
    # A100-80GB: same placements, go-nvml a100_80gb MiB
    ("a100-80gb", "1g.10gb", (9856, 1, (0, 1, 2, 3, 4, 5, 6))),
    ("a100-80gb", "1g.20gb", (19968, 2, (0, 2, 4, 6))),
    ("a100-80gb", "2g.20gb", (19968, 2, (0, 2, 4))),
    ("a100-80gb", "3g.40gb", (40192, 4, (0, 4))),
    ("a100-80gb", "4g.40gb", (40192, 4, (0,))),
    ("a100-80gb", "7g.80gb", (80384, 8, (0,))),
    # H100-80GB: MIG guide table 7; MiB = nvidia-smi GiB * 1024
    ("h100-80gb", "1g.10gb", (9984, 1, (0, 1, 2, 3, 4, 5, 6))),  # 9.75 GiB * 1024
    ("h100-80gb", "1g.20gb", (20096, 2, (0, 2, 4, 6))),  # 19.625 GiB * 1024
    ("h100-80gb", "2g.20gb", (20096, 2, (0, 2, 4))),
    ("h100-80gb", "3g.40gb", (40448, 4, (0, 4))),  # 39.5 GiB * 1024
    ("h100-80gb", "4g.40gb", (40448, 4, (0,))),
    ("h100-80gb", "7g.80gb", (81152, 8, (0,))),  # 79.25 GiB * 1024
    # A30-24GB: 4 memory slices; go-nvml a30 mocks
    ("a30", "1g.6gb", (5836, 1, (0, 1, 2, 3))),
    ("a30", "2g.12gb", (11672, 2, (0, 2))),
    ("a30", "4g.24gb", (23344, 4, (0,))),
    # H200-141GB: MIG guide table 8; go-nvml h200 MiB; placements inferred (8-slot GH100)
    ("h200-141gb", "1g.18gb", (18432, 1, (0, 1, 2, 3, 4, 5, 6))),
    ("h200-141gb", "1g.35gb", (35840, 2, (0, 2, 4, 6))),
    ("h200-141gb", "2g.35gb", (35840, 2, (0, 2, 4))),
    ("h200-141gb", "3g.71gb", (72704, 4, (0, 4))),
    ("h200-141gb", "4g.71gb", (72704, 4, (0,))),
    ("h200-141gb", "7g.141gb", (144384, 8, (0,))),
]


def _mask(starts: tuple[int, ...]) -> int:
    return sum(1 << s for s in starts)


@pytest.mark.parametrize(
    ("type_id", "profile", "geometry"),
    NVIDIA_TABLES,
    ids=[f"{t} {p} is {m} MiB on {s} slice(s) starting at {set(st)}"
         for t, p, (m, s, st) in NVIDIA_TABLES],
)
def test_mig_profile_matches_the_nvidia_table(
        catalog: Catalog, type_id: str, profile: str,
        geometry: tuple[int, int, tuple[int, ...]]) -> None:
    memory, slices, starts = geometry
    t = catalog.index_of(type_id)
    found = catalog.mig_profile(t, profile)
    assert found is not None
    assert (found.memory_mib, found.slices, found.starts) == (memory, slices, starts)
    assert found.resource_name == f"nvidia.com/mig-{profile}"
    # the numpy tables the fit kernel gathers from say the same
    p = catalog.mig.index[profile]
    assert catalog.mig.slices[p, t] == slices
    assert catalog.mig.start_mask[p, t] == found.start_mask == _mask(starts)
    assert catalog.mig.memory_mib[p, t] == memory


@pytest.mark.parametrize(
    ("starts", "mask"),
    [
        P((0, 1, 2, 3, 4, 5, 6), ALL7, id="seven single-slot starts are 0b01111111 = 127"),
        P((0, 2, 4, 6), EVEN4, id="even starts are 0b01010101 = 85"),
        P((0, 2, 4), EVEN3, id="three even starts are 0b00010101 = 21"),
        P((0, 4), HALVES, id="halves are 0b00010001 = 17"),
        P((0,), FIRST, id="slot zero only is 1"),
    ],
)
def test_start_masks_set_one_bit_per_start(starts: tuple[int, ...], mask: int) -> None:
    assert _mask(starts) == mask


@pytest.mark.parametrize(
    ("type_id", "slots"),
    [
        P("a100-40gb", 8, id="the A100-40GB has 8 memory slots"),
        P("a100-80gb", 8, id="the A100-80GB has 8 memory slots"),
        P("h100-80gb", 8, id="the H100 has 8 memory slots"),
        P("h200-141gb", 8, id="the H200 has 8 memory slots"),
        P("a30", 4, id="the A30 has 4 memory slots"),
        P("t4", 0, id="the T4 has no MIG"),
        P("l4", 0, id="the L4 has no MIG"),
        P("l40s", 0, id="the L40S has no MIG"),
        P("v100-16gb", 0, id="the V100 has no MIG"),
    ],
)
def test_mig_slots_per_type(catalog: Catalog, type_id: str, slots: int) -> None:
    t = catalog.index_of(type_id)
    assert catalog.mig_slots[t] == slots
    geometry = catalog.types[t].mig
    assert (geometry.slots if geometry else 0) == slots


@pytest.mark.parametrize(
    "type_id", ["a100-40gb", "a100-80gb", "h100-80gb", "a30", "h200-141gb"],
    ids=lambda t: f"{t} has exactly the profiles of the NVIDIA table",
)
def test_no_profiles_beyond_the_nvidia_table(catalog: Catalog, type_id: str) -> None:
    geometry = catalog.types[catalog.index_of(type_id)].mig
    assert geometry is not None
    expected = {p for t, p, *_ in NVIDIA_TABLES if t == type_id}
    assert {p.name for p in geometry.profiles} == expected


@pytest.mark.parametrize(
    ("profile", "types"),
    [
        P("1g.10gb", {"a100-40gb", "a100-80gb", "a800-80gb", "h100-80gb", "h800"},
          id="1g.10gb exists on the A100s, the A800 and the 80 GB Hoppers"),
        P("1g.5gb", {"a100-40gb"}, id="1g.5gb exists only on the A100-40GB"),
        P("3g.40gb", {"a100-80gb", "a800-80gb", "h100-80gb", "h800"},
          id="3g.40gb exists on the 80 GB A100-class and H100-class GPUs"),
        P("1g.6gb", {"a30"}, id="1g.6gb exists only on the A30"),
        P("7g.141gb", {"h200-141gb"}, id="7g.141gb exists only on the H200"),
        P("9g.99gb", set(), id="an unknown profile exists nowhere"),
    ],
)
def test_types_with_mig_profile(catalog: Catalog, profile: str, types: set[str]) -> None:
    assert catalog.types_with_mig_profile(profile) == frozenset(
        catalog.index_of(t) for t in types)


def test_a_profile_missing_on_a_type_has_zero_slices(catalog: Catalog) -> None:
    p = catalog.mig.index["1g.5gb"]
    t4 = catalog.index_of("t4")
    a100_80 = catalog.index_of("a100-80gb")
    assert catalog.mig.slices[p, t4] == catalog.mig.slices[p, a100_80] == 0
    assert catalog.mig_profile(a100_80, "1g.5gb") is None


def test_every_shipped_profile_is_physically_possible(catalog: Catalog) -> None:
    for accel in catalog.types:
        if accel.mig is None:
            continue
        for profile in accel.mig.profiles:
            where = f"{accel.id} {profile.name}"
            assert profile.memory_mib <= accel.memory_mib, where
            assert all(s + profile.slices <= accel.mig.slots for s in profile.starts), where
            # instances of one profile never overlap: start_i + slices <= start_(i+1)
            assert all(a + profile.slices <= b
                       for a, b in zip(profile.starts, profile.starts[1:], strict=False)), where


def test_mig_tables_have_a_column_per_type_plus_unknown(catalog: Catalog) -> None:
    n = len(catalog) + 1
    assert catalog.mig.slices.shape == (len(catalog.mig.names), n)
    assert catalog.mig.start_mask.shape == catalog.mig.memory_mib.shape == catalog.mig.slices.shape
    assert catalog.mig.slices.dtype == np.int8
    assert catalog.mig.start_mask.dtype == np.uint8


class TestUnknownIndex:
    """A GPU whose model the catalog does not know: protected, priced at the max, no MIG."""

    def test_it_is_one_past_the_last_type(self, catalog: Catalog) -> None:
        assert catalog.unknown_index == len(catalog.types)

    def test_it_is_protected(self, catalog: Catalog) -> None:
        assert bool(catalog.protected[catalog.unknown_index]) is True

    def test_it_is_priced_like_the_most_expensive_type(self, catalog: Catalog) -> None:
        # b200-180gb at 14.24 USD/GPU-h is the dearest shipped type
        assert catalog.price[catalog.unknown_index] == max(t.price for t in catalog.types)
        assert catalog.price[catalog.unknown_index] == pytest.approx(14.24)

    def test_it_has_no_memory_and_no_mig(self, catalog: Catalog) -> None:
        u = catalog.unknown_index
        assert catalog.memory_mib[u] == 0
        assert catalog.mig_slots[u] == 0
        assert not catalog.mig.slices[:, u].any()
        assert catalog.mig_profile(u, "1g.10gb") is None

    def test_no_name_resolves_to_it(self, catalog: Catalog) -> None:
        assert catalog.resolve("unknown") is None


@pytest.mark.parametrize(
    ("type_id", "price", "protected"),
    [
        P("h100-80gb", 6.88, True, id="H100 costs 6.88 and is protected"),
        P("a100-80gb", 3.43, True, id="A100-80GB costs 3.43 and is protected"),
        P("a100-40gb", 2.74, True, id="A100-40GB costs 2.74 and is protected"),
        P("h200-141gb", 7.91, True, id="H200 is protected"),
        P("b200-180gb", 14.24, True, id="B200 is protected"),
        P("l40s", 1.86, False, id="L40S costs 1.86 and is open"),
        P("a10g", 1.01, False, id="A10G costs 1.01 and is open"),
        P("l4", 0.80, False, id="L4 costs 0.80 and is open"),
        P("v100-16gb", 3.06, False, id="V100 costs 3.06 and is open"),
        P("t4", 0.53, False, id="T4 costs 0.53 and is open"),
    ],
)
def test_shipped_prices_and_protection_match_the_design(catalog: Catalog, type_id: str,
                                                        price: float, protected: bool) -> None:
    t = catalog.index_of(type_id)
    assert catalog.price[t] == pytest.approx(price)
    assert bool(catalog.protected[t]) is protected
