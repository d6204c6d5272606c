"""MIG layouts rebuilt from instance counts: every mig-parted layout of every MIG type in the
catalog decodes to one GPU per physical GPU, with that layout's instances on each.

The layouts are mig-parted's `deployments/systemd/config-default.yaml` (NVIDIA/mig-parted),
per GPU; the device plugin's mixed strategy advertises their totals over all GPUs of a node.
"""

from __future__ import annotations

from collections import Counter

import pytest

from extender.catalog import Catalog
from extender.kube import mig_layout
from extender.kube.decode_node import NodeDecoder
from extender.platform import Platform
from tests.builders import make_node

P = pytest.param

LAYOUTS_80GB = {
    "all-1g.10gb": {"1g.10gb": 7},
    "all-1g.20gb": {"1g.20gb": 4},
    "all-2g.20gb": {"2g.20gb": 3},
    "all-3g.40gb": {"3g.40gb": 2},
    "all-4g.40gb": {"4g.40gb": 1},
    "all-7g.80gb": {"7g.80gb": 1},
    "all-balanced": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
}

# product label -> {mig-parted config name: instances per GPU}
MIG_PARTED = {
    "NVIDIA-A100-SXM4-40GB": {
        "all-1g.5gb": {"1g.5gb": 7},
        "all-1g.10gb": {"1g.10gb": 4},
        "all-2g.10gb": {"2g.10gb": 3},
        "all-3g.20gb": {"3g.20gb": 2},
        "all-4g.20gb": {"4g.20gb": 1},
        "all-7g.40gb": {"7g.40gb": 1},
        "all-balanced": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
    },
    # mig-parted lists the same configurations for both 80 GB types
    "NVIDIA-A100-SXM4-80GB": LAYOUTS_80GB,
    "NVIDIA-H100-80GB-HBM3": LAYOUTS_80GB,
    "NVIDIA-H200": {
        "all-1g.18gb": {"1g.18gb": 7},
        "all-1g.35gb": {"1g.35gb": 4},
        "all-2g.35gb": {"2g.35gb": 3},
        "all-3g.71gb": {"3g.71gb": 2},
        "all-4g.71gb": {"4g.71gb": 1},
        "all-7g.141gb": {"7g.141gb": 1},
        "all-balanced": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
    },
}

CASES = [P(product, per_gpu, gpus, stated, id=f"{product} {name} x{gpus}"
           + ("" if stated else " (no gpu.count)"))
         for product, configs in MIG_PARTED.items()
         for name, per_gpu in configs.items()
         for gpus in (1, 8)
         for stated in (True, False)]


@pytest.fixture(scope="module")
def nodes(platform: Platform) -> NodeDecoder:
    return platform.nodes


@pytest.mark.parametrize(("product", "per_gpu", "gpus", "stated"), CASES)
def test_every_mig_parted_layout_decodes_to_one_gpu_per_physical_gpu(
        nodes: NodeDecoder, catalog: Catalog, product: str, per_gpu: dict[str, int], *,
        gpus: int, stated: bool) -> None:
    # e.g. all-balanced on 8 A100-40GBs: mig-1g.5gb 16, mig-2g.10gb 8, mig-3g.20gb 8
    node = make_node().gfd(product, count=gpus if stated else None).mig(
        {profile: n * gpus for profile, n in per_gpu.items()})
    info = nodes.decode(node.obj())
    assert info.problems == ()
    assert len(info.gpus) == gpus
    geometry = catalog.types[catalog.resolve_node_type(product)].mig
    assert geometry is not None
    for gpu in info.gpus:
        assert gpu.mig is not None and not gpu.mig.dynamic
        assert Counter(name for name, _ in gpu.mig.instances) == Counter(per_gpu)
        used = 0
        for name, start in gpu.mig.instances:
            profile = geometry.profile(name)
            assert profile is not None and start in profile.starts
            span = ((1 << profile.slices) - 1) << start
            assert not used & span, f"{name}@{start} overlaps on GPU {gpu.index}"
            used |= span


def test_all_balanced_is_not_split_into_a_phantom_gpu(nodes: NodeDecoder) -> None:
    # The greedy packing put 3g at 0, 2g at 4, 1g at 6 and the second 1g on a second GPU.
    # The only fit: 2g at 0 (slots 0-1), the 1gs at 2 and 3, the 3g at 4 (slots 4-7).
    node = make_node().gfd("NVIDIA-A100-SXM4-40GB").mig(
        {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1})
    info = nodes.decode(node.obj())
    assert [g.mig.instances for g in info.gpus if g.mig] == [
        (("2g.10gb", 0), ("1g.5gb", 2), ("1g.5gb", 3), ("3g.20gb", 4))]


@pytest.mark.parametrize(
    ("stated", "counts", "gpus", "fragment"),
    [
        # 2 x 7g.80gb need two GPUs; the node says one.
        P(1, {"7g.80gb": 2}, 2, "1 GPU(s) stated, but the advertised MIG instances "
          "(2 x 7g.80gb) need more", id="fewer GPUs stated than the instances need"),
        # 2 x 3g.40gb fit one GPU (or two); the node says three: one is left empty.
        P(3, {"3g.40gb": 2}, 3, "the MIG instances fill only 2; the other 1 read as "
          "MIG-enabled with no instances", id="more GPUs stated than the instances fill"),
    ],
)
def test_a_gpu_count_that_disagrees_with_the_instances_is_a_problem(
        nodes: NodeDecoder, stated: int, counts: dict[str, int], gpus: int,
        fragment: str) -> None:
    info = nodes.decode(make_node().gfd("NVIDIA-A100-SXM4-80GB", count=stated).mig(counts).obj())
    assert any(fragment in p for p in info.problems), info.problems
    assert len(info.gpus) == gpus


def test_uneven_totals_without_a_count_use_the_fewest_gpus(catalog: Catalog) -> None:
    geometry = catalog.types[catalog.resolve_node_type("NVIDIA-A100-SXM4-80GB")].mig
    assert geometry is not None
    three_g, one_g = geometry.profile("3g.40gb"), geometry.profile("1g.10gb")
    assert three_g is not None and one_g is not None
    # 3g (4 slots) + 4 x 1g (4 slots) = 8 slots: one GPU, 3g at 0 or 4 and the 1gs beside it.
    packing = mig_layout.pack(geometry.slots, {three_g: 1, one_g: 4}, None)
    assert packing.problems == ()
    assert len(packing.layouts) == 1
    assert Counter(name for name, _ in packing.layouts[0]) == {"3g.40gb": 1, "1g.10gb": 4}


def test_a_stated_count_too_small_uses_the_fewest_gpus_that_hold_them(catalog: Catalog) -> None:
    geometry = catalog.types[catalog.resolve_node_type("NVIDIA-A100-SXM4-80GB")].mig
    assert geometry is not None
    one_g = geometry.profile("1g.10gb")
    two_g = geometry.profile("2g.20gb")
    assert one_g is not None and two_g is not None
    # 7 x 1g fit one GPU (slots 0-6) but 1 x 2g needs slots 0-1, 2-3 or 4-5: on 1 stated GPU
    # nothing fits, so the fewest that can (two) are used and the disagreement is reported.
    packing = mig_layout.pack(geometry.slots, {one_g: 7, two_g: 1}, 1)
    assert len(packing.layouts) == 2
    assert any("1 GPU(s) stated" in p for p in packing.problems)


def test_a_search_over_its_budget_packs_first_fit_and_says_so(
        catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    geometry = catalog.types[catalog.resolve_node_type("NVIDIA-A100-SXM4-40GB")].mig
    assert geometry is not None
    one_g, two_g = geometry.profile("1g.5gb"), geometry.profile("2g.10gb")
    assert one_g is not None and two_g is not None
    monkeypatch.setattr(mig_layout, "SEARCH_BUDGET", 0)
    # First fit, 2g first: 2g at 0, 2, 4 (slots 0-5), 1g at 6, then one more 1g on GPU 2.
    packing = mig_layout.pack(geometry.slots, {one_g: 2, two_g: 3}, None)
    assert packing.layouts == ((("2g.10gb", 0), ("2g.10gb", 2), ("2g.10gb", 4), ("1g.5gb", 6)),
                               (("1g.5gb", 0),))
    assert any("packed first-fit" in p for p in packing.problems)
