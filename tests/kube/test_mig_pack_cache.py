"""``mig_layout.PackCache``: ``pack`` remembered on its inputs, bounded, least recently used
out; a ``NodeDecoder`` packs a node's MIG counts through its own cache."""

from __future__ import annotations

import pytest

from extender.catalog import Catalog
from extender.catalog.types import MigGeometry, MigProfile
from extender.kube import mig_layout
from extender.kube.decode_node import NodeDecoder
from extender.platform import Platform
from tests.builders import make_node


@pytest.fixture(scope="module")
def a100(catalog: Catalog) -> MigGeometry:
    geometry = catalog.types[catalog.resolve_node_type("NVIDIA-A100-SXM4-80GB")].mig
    assert geometry is not None
    return geometry


def profile(geometry: MigGeometry, name: str) -> MigProfile:
    found = geometry.profile(name)
    assert found is not None
    return found


def test_the_same_inputs_get_the_same_answer_once_computed(a100: MigGeometry) -> None:
    cache = mig_layout.PackCache()
    one_g, three_g = profile(a100, "1g.10gb"), profile(a100, "3g.40gb")
    first = cache.pack(a100.slots, {three_g: 1, one_g: 4}, None)
    again = cache.pack(a100.slots, {one_g: 4, three_g: 1}, None)  # the order does not matter
    assert again is first
    assert (cache.misses, cache.hits, len(cache)) == (1, 1, 1)
    assert first == mig_layout.pack(a100.slots, {three_g: 1, one_g: 4}, None)


def test_each_input_is_part_of_the_key(a100: MigGeometry) -> None:
    cache = mig_layout.PackCache()
    one_g = profile(a100, "1g.10gb")
    # 14 x 1g.10gb: the fewest GPUs is 2 (7 per GPU); stated 3 spreads them over 3; 15 needs 3
    fewest = cache.pack(a100.slots, {one_g: 14}, None)
    stated = cache.pack(a100.slots, {one_g: 14}, 3)
    more = cache.pack(a100.slots, {one_g: 15}, None)
    assert (cache.misses, cache.hits) == (3, 0)
    assert [len(layout) for layout in fewest.layouts] == [7, 7]
    assert len(stated.layouts) == 3 and sum(len(layout) for layout in stated.layouts) == 14
    assert len(more.layouts) == 3


def test_the_cache_is_bounded_and_drops_the_least_recently_used(a100: MigGeometry) -> None:
    cache = mig_layout.PackCache(size=2)
    one_g = profile(a100, "1g.10gb")
    a = cache.pack(a100.slots, {one_g: 1})
    cache.pack(a100.slots, {one_g: 2})
    assert cache.pack(a100.slots, {one_g: 1}) is a  # a is now the most recently used
    cache.pack(a100.slots, {one_g: 3})  # drops {one_g: 2}
    assert len(cache) == 2
    misses = cache.misses
    assert cache.pack(a100.slots, {one_g: 1}) is a
    cache.pack(a100.slots, {one_g: 2})
    assert cache.misses == misses + 1  # only {one_g: 2} was computed again


def test_a_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="size must be >= 1, not 0"):
        mig_layout.PackCache(size=0)


def test_nodes_with_the_same_counts_share_one_packing(platform: Platform) -> None:
    decoder = NodeDecoder(platform.catalog, platform.labels)
    counts = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}  # all-balanced on one GPU
    first = decoder.decode(make_node("a").gfd("NVIDIA-A100-SXM4-80GB", count=1).mig(counts).obj())
    second = decoder.decode(make_node("b").gfd("NVIDIA-A100-SXM4-80GB", count=1).mig(counts)
                            .obj())
    assert first.gpus[0].mig is not None and second.gpus[0].mig is not None
    assert second.gpus[0].mig.instances is first.gpus[0].mig.instances
    assert first.problems == second.problems == ()
