"""DRA objects -> DraSlice / DraClaim / DraClass, pools -> node GPUs (``kube/decode_dra.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.kube.decode_dra import (
    MAX_DEVICES_PER_SLICE,
    complete_pools,
    decode_claim,
    decode_device_class,
    decode_slice,
    extended_claim_name,
    node_devices,
)
from extender.kube.shape import ShapeError
from extender.platform import Platform
from tests.dra_objects import (
    claim,
    device_class,
    gpu_device,
    gpus,
    mig_device,
    resource_slice,
    result,
)

A100 = "NVIDIA A100-SXM4-80GB"


def test_a_slice_of_the_gpu_driver_decodes_its_devices() -> None:
    decoded = decode_slice(resource_slice("n1", gpus("n1", "Tesla T4", 2, "15Gi")))
    assert decoded is not None
    assert (decoded.node, decoded.pool, decoded.generation, decoded.slice_count) == \
        ("n1", "n1", 1, 1)
    first = decoded.devices[0]
    # 15Gi = 15 x 1024 MiB = 15360 MiB
    assert (first.name, first.kind, first.product, first.uuid, first.memory_mib) == \
        ("gpu-0", "gpu", "Tesla T4", "GPU-n1-0", 15360)


def test_slices_of_other_drivers_or_without_a_node_are_not_ours() -> None:
    assert decode_slice(resource_slice("n1", [], driver="net.example.com")) is None
    network = resource_slice("n1", [])
    del network["spec"]["nodeName"]
    assert decode_slice(network) is None


def _with(obj: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    *parents, last = path.split(".")
    part = obj
    for key in parents:
        part = part[int(key)] if isinstance(part, list) else part[key]
    if isinstance(part, list):
        part[int(last)] = value
    else:
        part[last] = value
    return obj


@pytest.mark.parametrize(("path", "value", "field"), [
    ("spec.driver", 7, "spec.driver"),
    ("spec.pool.generation", "1", "spec.pool.generation"),
    ("spec.pool.generation", True, "spec.pool.generation"),  # a bool is no integer
    ("spec.pool.resourceSliceCount", 0, "spec.pool.resourceSliceCount"),
    ("spec.devices", {"gpu-0": {}}, "spec.devices"),
    ("spec.devices.0", "gpu-0", "spec.devices[0]"),
    ("spec.devices.0.attributes.productName", "Tesla T4",
     "spec.devices[0].attributes[productName]"),
    ("spec.devices.0.capacity.memory", {"value": "lots"}, "spec.devices[0].capacity.memory"),
    # 2^40 MiB is beyond any GPU
    ("spec.devices.0.capacity.memory", {"value": "1Ei"}, "spec.devices[0].capacity.memory"),
    ("spec.devices.0.name", "x" * 300, "spec.devices[0].name"),
])
def test_a_malformed_slice_is_refused_naming_the_field(path: str, value: object,
                                                       field: str) -> None:
    obj = _with(resource_slice("n1", gpus("n1", "Tesla T4", 1, "15Gi")), path, value)
    with pytest.raises(ShapeError) as caught:
        decode_slice(obj)
    assert str(caught.value).startswith(field)


def test_a_slice_with_more_devices_than_the_api_allows_is_refused() -> None:
    devices = gpus("n1", "Tesla T4", 1, "15Gi") * (MAX_DEVICES_PER_SLICE + 1)
    with pytest.raises(ShapeError, match="at most 128"):
        decode_slice(resource_slice("n1", devices))


def _slice(name: str, generation: int, count: int, *names: str) -> Any:
    decoded = decode_slice(resource_slice(
        "n1", [gpu_device(n, "Tesla T4", f"GPU-{n}", "15Gi") for n in names], name=name,
        generation=generation, slice_count=count))
    assert decoded is not None
    return decoded


@pytest.mark.parametrize(("slices", "devices"), [
    # one slice of one: its devices
    ([("a", 1, 1, "gpu-0")], ["gpu-0"]),
    # generation 2 complete (2 of 2): generation 1 is stale
    ([("a", 1, 1, "old"), ("b", 2, 2, "gpu-0"), ("c", 2, 2, "gpu-1")], ["gpu-0", "gpu-1"]),
    # generation 2 half published (1 of 2): the pool is not known yet
    ([("a", 1, 1, "old"), ("b", 2, 2, "gpu-0")], None),
])
def test_a_pool_is_its_highest_generation_once_all_its_slices_are_in(
        slices: list[tuple[str, int, int, str]], devices: list[str] | None) -> None:
    pools = complete_pools([_slice(*s) for s in slices])
    if devices is None:
        assert pools == {}
    else:
        node, found = pools["n1"]
        assert node == "n1" and [d.name for d in found] == devices


def test_pool_devices_become_gpus_with_catalog_types_and_mig_devices_on_their_gpu(
        platform: Platform) -> None:
    catalog = platform.catalog
    devices = [
        gpu_device("gpu-0", A100, "GPU-a", "80Gi", counter_set="gpu-0-counters"),
        gpu_device("gpu-1", A100, "GPU-b", "80Gi", taint="NoSchedule"),
        mig_device("gpu-0-mig-1g.10gb-0", A100, "MIG-a0", "1g.10gb", "9856Mi",
                   counter_set="gpu-0-counters"),
        mig_device("gpu-1-mig-1g.10gb-0", A100, "MIG-b0", "1g.10gb", "9856Mi",
                   parent_uuid="GPU-b"),
        mig_device("orphan", A100, "MIG-x", "1g.10gb", "9856Mi"),
    ]
    decoded = decode_slice(resource_slice("n1", devices))
    assert decoded is not None
    found, refs, problems = node_devices(decoded.devices, catalog)
    # 80Gi = 81920 MiB, nearest catalog memory: a100-80gb
    assert [(g.index, catalog.id_of(g.type_index), g.memory_mib, g.uuid, g.dra_device,
             g.healthy) for g in found] == [
        (0, "a100-80gb", 81920, "GPU-a", "gpu-0", True),
        (1, "a100-80gb", 81920, "GPU-b", "gpu-1", False)]  # tainted NoSchedule
    assert {(r.name, r.gpu_index, r.kind) for r in refs} == {
        ("gpu-0", 0, "gpu"), ("gpu-1", 1, "gpu"),
        ("gpu-0-mig-1g.10gb-0", 0, "mig"),   # shares gpu-0's counter set
        ("gpu-1-mig-1g.10gb-0", 1, "mig")}   # parentUUID GPU-b
    assert len(problems) == 1 and "orphan" in problems[0]


def test_gpus_are_numbered_in_natural_name_order_and_unknown_products_said(
        platform: Platform) -> None:
    devices = [gpu_device(f"gpu-{i}", "Tesla T4", f"U{i}", "15Gi") for i in (10, 2, 1)]
    devices.append(gpu_device("gpu-11", "Banana GPU", "U11", "8Gi"))
    found, _, problems = node_devices(
        decode_slice(resource_slice("n1", devices)).devices,  # type: ignore[union-attr]
        platform.catalog)
    assert [g.dra_device for g in found] == ["gpu-1", "gpu-2", "gpu-10", "gpu-11"]
    assert found[3].type_index == platform.catalog.unknown_index
    assert "Banana GPU" in problems[0]


def test_a_claim_decodes_the_results_of_the_driver_only() -> None:
    obj = claim("c", [result("n1", "gpu-0"),
                      result("n1", "gpu-1", share_id="s1", memory="4Gi"),
                      result("n1", "gpu-2", admin=True)],
                pod_uid="pod-1", extended=True)
    obj["status"]["allocation"]["devices"]["results"].append(
        {"request": "r", "driver": "net.example.com", "pool": "n1", "device": "nic-0"})
    decoded = decode_claim(obj)
    assert [(r.device, r.share_id, r.consumed_mib, r.admin_access) for r in decoded.results] \
        == [("gpu-0", "", 0, False), ("gpu-1", "s1", 4096, False), ("gpu-2", "", 0, True)]
    assert decoded.reserved_for == ("pod-1",) and decoded.extended and decoded.allocated
    assert not decode_claim(claim("pending")).allocated


@pytest.mark.parametrize(("path", "value", "field"), [
    ("status.allocation.devices.results.0.adminAccess", "yes",
     "status.allocation.devices.results[0].adminAccess"),
    ("status.allocation.devices.results.0.consumedCapacity", {"memory": "a lot"},
     "status.allocation.devices.results[0].consumedCapacity.memory"),
    ("status.reservedFor", {"uid": "x"}, "status.reservedFor"),
])
def test_a_malformed_claim_is_refused_naming_the_field(path: str, value: object,
                                                       field: str) -> None:
    obj = _with(claim("c", [result("n1", "gpu-0")]), path, value)
    with pytest.raises(ShapeError) as caught:
        decode_claim(obj)
    assert str(caught.value).startswith(field)


def test_device_classes_and_the_pod_claim_status() -> None:
    assert decode_device_class(device_class()).extended_resource == "nvidia.com/gpu"
    assert decode_device_class(device_class("plain", None)).extended_resource == ""
    pod = {"status": {"extendedResourceClaimStatus": {"resourceClaimName": "p-er-x"}}}
    assert extended_claim_name(pod) == "p-er-x"
    assert extended_claim_name({"status": {"extendedResourceClaimStatus": 3}}) == ""
    assert extended_claim_name({}) == ""
