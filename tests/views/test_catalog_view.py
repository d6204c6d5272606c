"""``gpu-extender catalog``: golden text of the shipped catalog, one type, JSON, bad input."""

from __future__ import annotations

import orjson
import pytest

from extender.cli import main
from extender.platform import Platform
from extender.views.catalog import alias_ecosystem, catalog_document, render_catalog
from tests.views.golden_files import assert_golden


def test_the_whole_catalog_matches_its_golden_text(platform: Platform) -> None:
    assert_golden("catalog.txt", render_catalog(catalog_document(platform)))


def test_one_family_lists_its_members_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--type", "a100"]) == 0
    out = capsys.readouterr().out.rstrip("\n")
    assert_golden("catalog-a100.txt", out)
    ids = [line.split()[0] for line in out.splitlines()[1:] if line and not line[0].isspace()]
    assert ids[:2] == ["a100-40gb", "a100-80gb"]


def test_json_has_every_type_with_its_mig_placements(platform: Platform,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "-o", "json"]) == 0
    document = orjson.loads(capsys.readouterr().out)
    assert [t["id"] for t in document["types"]] == [t.id for t in platform.catalog.types]
    a100 = next(t for t in document["types"] if t["id"] == "a100-80gb")
    assert a100["protected"] is True
    profile = next(p for p in a100["mig"]["profiles"] if p["name"] == "3g.40gb")
    # 3g.40gb spans 4 of the 8 slots and may start at slot 0 or 4 (NVML placements)
    assert profile == {"name": "3g.40gb", "resource": "nvidia.com/mig-3g.40gb",
                       "memoryMiB": 40192, "slices": 4, "starts": [0, 4]}
    assert {"name": "nvidia-a100-80gb", "ecosystem": "gke/flyte"} in a100["aliases"]


@pytest.mark.parametrize(("alias", "ecosystem"), [
    ("NVIDIA-A100-SXM4-80GB", "gfd"), ("Tesla-T4", "gfd"), ("nvidia-tesla-t4", "gke/flyte"),
    ("V100M16", "trace"), ("A100-SXM4-40GB", "nvidia-smi"), ("tesla-t4", "other")])
def test_alias_ecosystem_is_read_from_the_spelling(alias: str, ecosystem: str) -> None:
    assert alias_ecosystem(alias) == ecosystem


@pytest.mark.parametrize(("name", "hint"), [
    ("a100-80", "; did you mean 'a100-80gb'?"),  # the review's example: a suffix missing
    ("a1000", "; did you mean 'a100'?"),
    ("zzz", ""),  # nothing close: no guess
])
def test_an_unknown_type_names_what_is_accepted(name: str, hint: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--type", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --type {name!r} is not a GPU type, family or alias{hint} "
                          "(accepted: a10, a100, a100-40gb, a100-80gb, ")
