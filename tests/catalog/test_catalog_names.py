"""Catalog names: exact matching after normalization, families, every shipped alias, and how a
node's type label is narrowed to one type."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
import yaml

from extender.catalog import AcceleratorType, Catalog, normalize_name

P = pytest.param


def _shipped_entries() -> list[dict[str, Any]]:
    text = resources.files("extender.catalog").joinpath("accelerators.yaml").read_text()
    return list(yaml.safe_load(text)["accelerators"])


SHIPPED = _shipped_entries()
ALIASES = [(str(alias), str(entry["id"]))
           for entry in SHIPPED for alias in entry.get("aliases", [])]


def ids(catalog: Catalog, *type_ids: str) -> frozenset[int]:
    return frozenset(catalog.index_of(t) for t in type_ids)


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        P("A100", "a100", id="upper case is lowered"),
        P("NVIDIA A100_SXM4", "nvidia-a100-sxm4", id="spaces and underscores become dashes"),
        P("  Tesla   T4  ", "tesla-t4", id="runs of blanks collapse and ends are trimmed"),
        P("nvidia-tesla-t4", "nvidia-tesla-t4", id="an already normal name is unchanged"),
        P("a100-80gb", "a100-80gb", id="dashes and digits are kept"),
    ],
)
def test_normalize_name(name: str, normalized: str) -> None:
    assert normalize_name(name) == normalized


@pytest.mark.parametrize(("alias", "type_id"), ALIASES,
                         ids=[f"{a} names {t}" for a, t in ALIASES])
def test_every_shipped_alias_resolves_to_exactly_its_type(catalog: Catalog, alias: str,
                                                          type_id: str) -> None:
    expected = ids(catalog, type_id)
    assert catalog.resolve(alias) == expected
    assert catalog.resolve(alias.upper()) == expected, "matching ignores case"
    assert catalog.resolve_node_type(alias) == catalog.index_of(type_id)


def test_the_shipped_catalog_has_aliases_for_every_ecosystem() -> None:
    # A guard that the generated test above really covers something.
    assert len(ALIASES) >= 50


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # GFD nvidia.com/gpu.product
        P("Tesla-T4", ("t4",), id="GFD Tesla-T4 is the t4"),
        P("NVIDIA-A100-SXM4-80GB", ("a100-80gb",), id="GFD NVIDIA-A100-SXM4-80GB is a100-80gb"),
        P("NVIDIA-A100-SXM4-40GB", ("a100-40gb",), id="GFD NVIDIA-A100-SXM4-40GB is a100-40gb"),
        P("NVIDIA-H100-80GB-HBM3", ("h100-80gb",), id="GFD NVIDIA-H100-80GB-HBM3 is h100-80gb"),
        P("NVIDIA-L40S", ("l40s",), id="GFD NVIDIA-L40S is l40s"),
        # GKE cloud.google.com/gke-accelerator
        P("nvidia-tesla-a100", ("a100-40gb",), id="GKE nvidia-tesla-a100 is the 40 GB A100"),
        P("nvidia-a100-80gb", ("a100-80gb",), id="GKE nvidia-a100-80gb is the 80 GB A100"),
        P("nvidia-h100-80gb", ("h100-80gb",), id="GKE nvidia-h100-80gb is h100-80gb"),
        P("nvidia-l4", ("l4",), id="GKE nvidia-l4 is l4"),
        P("nvidia-tesla-t4", ("t4",), id="GKE and Flyte nvidia-tesla-t4 is t4"),
        # Karpenter karpenter.k8s.aws/instance-gpu-name (lower case, family-level)
        P("a10g", ("a10g",), id="Karpenter a10g is a10g"),
        P("a100", ("a100-40gb", "a100-80gb"), id="Karpenter a100 is the A100 family"),
        P("h100", ("h100-80gb", "h100-94gb"), id="Karpenter h100 is the H100 family"),
        P("l40s", ("l40s",), id="Karpenter l40s is l40s"),
        # AKS karpenter.azure.com/sku-gpu-name (upper case)
        P("A100", ("a100-40gb", "a100-80gb"), id="AKS A100 is the A100 family"),
        P("T4", ("t4",), id="AKS T4 is t4"),
        P("V100", ("v100-16gb", "v100-32gb"), id="AKS V100 is the V100 family"),
        # Flyte accelerator strings and openb trace model names
        P("nvidia-tesla-v100", ("v100-16gb",), id="Flyte nvidia-tesla-v100 is v100-16gb"),
        P("nvidia-a10g", ("a10g",), id="Flyte nvidia-a10g is a10g"),
        P("V100M16", ("v100-16gb",), id="trace V100M16 is v100-16gb"),
        P("V100M32", ("v100-32gb",), id="trace V100M32 is v100-32gb"),
        P("P100", ("p100",), id="trace P100 is p100"),
        P("A10", ("a10",), id="trace A10 is a10"),
    ],
)
def test_ecosystem_spellings_resolve_to_canonical_types(catalog: Catalog, name: str,
                                                        expected: tuple[str, ...]) -> None:
    assert catalog.resolve(name) == ids(catalog, *expected)


@pytest.mark.parametrize(
    ("name", "not_type"),
    [
        P("a10", "a100-40gb", id="a10 never resolves to an A100"),
        P("a10", "a10g", id="a10 never resolves to the a10g"),
        P("l4", "l40s", id="l4 never resolves to the l40s"),
        P("t4", "h100-80gb", id="t4 is only the t4"),
        P("a100", "a800-80gb", id="the a100 family is not the a800"),
        P("h100", "h800", id="the h100 family is not the h800"),
    ],
)
def test_matching_is_exact_never_by_substring(catalog: Catalog, name: str, not_type: str) -> None:
    resolved = catalog.resolve(name)
    assert resolved is not None
    assert not_type not in {catalog.id_of(i) for i in resolved}


@pytest.mark.parametrize(
    "name",
    ["a1", "a10-", "nvidia-a100", "A100-SXM4", "l", "4", "", "tesla", "nvidia", "gpu",
     "a100-80", "h100-80gb-hbm3e"],
    ids=lambda n: f"{n!r} is not a type",
)
def test_prefixes_and_near_misses_do_not_resolve(catalog: Catalog, name: str) -> None:
    assert catalog.resolve(name) is None
    assert catalog.resolve_node_type(name) is None


@pytest.mark.parametrize(
    ("family", "members"),
    [
        P("a100", ("a100-40gb", "a100-80gb"), id="a100 means both A100 sizes"),
        P("v100", ("v100-16gb", "v100-32gb"), id="v100 means both V100 sizes"),
        P("h100", ("h100-80gb", "h100-94gb"), id="h100 means both H100 variants"),
        P("t4", ("t4",), id="a family of one that is also an id is that type"),
        P("a10", ("a10",), id="a10 is its own family of one"),
        P("h200", ("h200-141gb",), id="h200 is the h200-141gb"),
        P("b200", ("b200-180gb",), id="b200 is the b200-180gb"),
    ],
)
def test_family_names_select_every_member(catalog: Catalog, family: str,
                                          members: tuple[str, ...]) -> None:
    assert catalog.resolve(family) == ids(catalog, *members)
    assert catalog.families[family] == ids(catalog, *members)


def test_every_canonical_id_resolves_to_itself(catalog: Catalog) -> None:
    for i, accel in enumerate(catalog.types):
        assert catalog.index_of(accel.id) == i
        assert catalog.id_of(i) == accel.id
        assert catalog.resolve(accel.id) == (catalog.families.get(accel.id) or frozenset({i}))


def test_accepted_names_lists_ids_and_families_sorted(catalog: Catalog) -> None:
    names = catalog.accepted_names()
    assert names == sorted(names)
    assert {"a100", "a100-40gb", "a100-80gb", "t4", "l4", "l40s", "h100-80gb"} <= set(names)
    assert "NVIDIA-A100-SXM4-80GB" not in names, "aliases are not listed (too many)"


@pytest.mark.parametrize(
    ("name", "memory", "expected"),
    [
        P("a100", None, "a100-40gb",
          id="a100 without a memory label is the smaller A100 (never over-commits)"),
        P("a100", 81920, "a100-80gb", id="a100 with 81920 MiB is the 80 GB A100"),
        P("a100", 40960, "a100-40gb", id="a100 with 40960 MiB is the 40 GB A100"),
        P("a100", 39538, "a100-40gb", id="a100 with 39538 MiB (NVML total) is nearest the 40 GB"),
        P("a100", 80000, "a100-80gb", id="a100 with 80000 MiB is nearest the 80 GB"),
        # |61000-40960| = 20040 < |61000-81920| = 20920
        P("a100", 61000, "a100-40gb", id="a100 with 61000 MiB is 20040 from 40 GB and 20920 "
                                         "from 80 GB so 40 GB"),
        P("a100", 0, "a100-40gb", id="a zero memory label is ignored"),
        P("h100", 96256, "h100-94gb", id="h100 with 96256 MiB is the 94 GB H100"),
        P("h100", 81559, "h100-80gb", id="h100 with 81559 MiB is the 80 GB H100"),
        P("v100", 32768, "v100-32gb", id="v100 with 32768 MiB is the 32 GB V100"),
        P("v100", None, "v100-16gb", id="v100 without memory is the 16 GB V100"),
        P("NVIDIA-A100-SXM4-40GB", 81920, "a100-40gb",
          id="an exact alias is not second-guessed by the memory label"),
        P("t4", 99999, "t4", id="a single-member name ignores memory"),
    ],
)
def test_resolve_node_type_narrows_a_family_by_memory(catalog: Catalog, name: str,
                                                      memory: int | None, expected: str) -> None:
    assert catalog.resolve_node_type(name, memory) == catalog.index_of(expected)


def test_unknown_node_type_is_none(catalog: Catalog) -> None:
    assert catalog.resolve_node_type("NVIDIA-RTX-9090", 24576) is None


def test_id_of_the_unknown_index_is_unknown(catalog: Catalog) -> None:
    assert catalog.unknown_index == len(catalog) == len(catalog.types)
    assert catalog.id_of(catalog.unknown_index) == "unknown"


def test_mask_and_describe(catalog: Catalog) -> None:
    chosen = ids(catalog, "t4", "l4")
    mask = catalog.mask(chosen)
    assert mask.shape == (len(catalog) + 1,)
    assert set(mask.nonzero()[0].tolist()) == set(chosen)
    assert catalog.describe(chosen) == "l4, t4"
    assert catalog.describe([catalog.unknown_index]) == "unknown"


def test_a_small_custom_catalog_indexes_in_order_and_by_family() -> None:
    small = Catalog([
        AcceleratorType("x-small", "x", 1000, 1.0, False, aliases=("X_Small",)),
        AcceleratorType("x-large", "x", 2000, 2.0, True),
    ])
    assert small.resolve("x") == frozenset({0, 1})
    assert small.resolve("x small") == frozenset({0}), "alias matched after normalization"
    assert small.resolve_node_type("x", 1900) == 1
    assert small.unknown_index == 2
