"""The verbs on payloads captured in the exact shape kube-scheduler sends (tests/data)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.platform import Platform
from extender.server.app import create_app
from extender.server.service import ExtenderService
from extender.sync.offline import load_cluster_file
from tests.server.conftest import DATA, fixture_bytes, post


def args_of(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(fixture_bytes(name))
    return doc


def assert_partition(result: dict[str, Any], names: list[str]) -> None:
    """Every candidate is answered exactly once."""
    feasible = result.get("NodeNames")
    if feasible is None:
        feasible = [n["metadata"]["name"] for n in result["Nodes"]["items"]]
    groups = [set(feasible), set(result["FailedNodes"]), set(result["FailedAndUnresolvableNodes"])]
    assert sum(len(g) for g in groups) == len(names)
    assert set().union(*groups) == set(names)
    assert all(isinstance(v, str) and v for g in ("FailedNodes", "FailedAndUnresolvableNodes")
               for v in result[g].values())


def test_typed_pod_with_node_names(client: FlaskClient) -> None:
    args = args_of("filter_typed_nodenames.json")
    result = post(client, "/filter", fixture_bytes("filter_typed_nodenames.json"))
    assert result["NodeNames"] == ["gpu-l4-0"]
    assert result["Error"] == ""
    assert "Nodes" not in result
    assert_partition(result, args["NodeNames"])
    unresolvable = result["FailedAndUnresolvableNodes"]
    assert "not in the GPU inventory" in unresolvable["ghost-node"]
    assert "t4" in unresolvable["gpu-t4-0"]
    assert unresolvable["cpu-0"] == "node has no GPUs"


def test_full_nodes_are_answered_with_nodes(client: FlaskClient) -> None:
    args = args_of("filter_typed_nodes.json")
    result = post(client, "/filter", fixture_bytes("filter_typed_nodes.json"))
    assert "NodeNames" not in result
    items = result["Nodes"]["items"]
    assert [i["metadata"]["name"] for i in items] == ["gpu-l4-0"]
    assert items[0] == next(n for n in args["Nodes"]["items"]
                            if n["metadata"]["name"] == "gpu-l4-0")
    assert_partition(result, [n["metadata"]["name"] for n in args["Nodes"]["items"]])


def test_unknown_full_nodes_are_judged_as_described(client: FlaskClient) -> None:
    """A cluster autoscaler template node: not in the inventory, but fits when empty."""
    args = args_of("filter_typed_nodes.json")
    template = next(n for n in args["Nodes"]["items"] if n["metadata"]["name"] == "gpu-l4-0")
    template = orjson.loads(orjson.dumps(template))
    template["metadata"]["name"] = "template-l4-upcoming"
    args["Nodes"]["items"].append(template)
    result = post(client, "/filter", args)
    names = [i["metadata"]["name"] for i in result["Nodes"]["items"]]
    assert names == ["gpu-l4-0", "template-l4-upcoming"]


def test_untyped_pods_never_land_on_protected_types(client: FlaskClient) -> None:
    result = post(client, "/filter", fixture_bytes("filter_untyped_nodenames.json"))
    assert set(result["NodeNames"]) == {"gpu-t4-0", "gpu-t4-1", "gpu-l4-0"}
    assert "protected" in result["FailedAndUnresolvableNodes"]["gpu-a100-0"]
    # its time-slice replicas are nvidia.com/gpu.shared units: an nvidia.com/gpu pod cannot
    # use them (kube-scheduler's own count check agrees)
    assert "gpu-a10g-shared-0" in result["FailedAndUnresolvableNodes"]


def test_mig_pod_only_fits_partitioned_gpus(client: FlaskClient) -> None:
    result = post(client, "/filter", fixture_bytes("filter_mig_nodenames.json"))
    assert result["NodeNames"] == ["gpu-a100-mig-0"]
    assert "MIG" in result["FailedAndUnresolvableNodes"]["gpu-a100-0"]


def test_vram_share_fits_unprotected_gpus_with_room(client: FlaskClient) -> None:
    result = post(client, "/filter", fixture_bytes("filter_vram_nodenames.json"))
    assert "gpu-t4-0" in result["NodeNames"] and "gpu-l4-0" in result["NodeNames"]
    assert "gpu-a100-0" in result["FailedAndUnresolvableNodes"]


def test_full_nodes_are_failed_not_unresolvable(client: FlaskClient,
                                                offline_service: ExtenderService) -> None:
    """A node that is only busy goes to FailedNodes (preemption may help)."""
    args = args_of("filter_untyped_nodenames.json")
    args["Pod"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "4"}}
    result = post(client, "/filter", args)
    # gpu-t4-0 has 2 of 4 GPUs taken (trainer-0), gpu-t4-1 3 of 4 (legacy-0, inferred)
    assert "in use" in result["FailedNodes"]["gpu-t4-0"]
    assert "in use" in result["FailedNodes"]["gpu-t4-1"]
    assert "gpu-l4-0" in result["NodeNames"]


def test_invalid_request_fails_every_node_with_the_reason(client: FlaskClient) -> None:
    args = args_of("filter_invalid_request.json")
    result = post(client, "/filter", fixture_bytes("filter_invalid_request.json"))
    assert result["NodeNames"] == [] and result["FailedNodes"] == {} and result["Error"] == ""
    messages = result["FailedAndUnresolvableNodes"]
    assert set(messages) == set(args["NodeNames"])
    assert all("gpu-extender.io/accelerator" in m and "rtx-9999" in m
               for m in messages.values())


def test_pods_without_gpus_pass_through(client: FlaskClient) -> None:
    args = args_of("filter_no_gpu.json")
    result = post(client, "/filter", fixture_bytes("filter_no_gpu.json"))
    assert result["NodeNames"] == args["NodeNames"]
    # every node scores 0: an empty list says exactly that to kube-scheduler
    assert post(client, "/prioritize", fixture_bytes("filter_no_gpu.json")) == []


@pytest.mark.parametrize("fixture", ["filter_typed_nodenames.json",
                                     "filter_untyped_nodenames.json",
                                     "filter_mig_nodenames.json",
                                     "filter_vram_nodenames.json",
                                     "filter_typed_nodes.json"])
def test_prioritize_scores_feasible_nodes_1_to_10_and_leaves_out_zeros(
        client: FlaskClient, fixture: str) -> None:
    args = args_of(fixture)
    names = args["NodeNames"] or [n["metadata"]["name"] for n in args["Nodes"]["items"]]
    filtered = post(client, "/filter", fixture_bytes(fixture))
    feasible = set(filtered.get("NodeNames") or
                   [n["metadata"]["name"] for n in filtered["Nodes"]["items"]])
    scores = post(client, "/prioritize", fixture_bytes(fixture))
    hosts = [s["Host"] for s in scores]
    assert len(hosts) == len(set(hosts)) and set(hosts) <= feasible <= set(names)
    assert all(type(s["Score"]) is int and 1 <= s["Score"] <= 10 for s in scores)
    assert max(s["Score"] for s in scores) == 10


def test_bind_fixture_records_the_assignment_for_the_next_filter(
        client: FlaskClient, offline_service: ExtenderService) -> None:
    post(client, "/filter", fixture_bytes("filter_typed_nodenames.json"))
    post(client, "/prioritize", fixture_bytes("filter_typed_nodenames.json"))
    assert post(client, "/bind", fixture_bytes("bind_typed.json")) == {"Error": ""}
    assert offline_service.offline is not None
    pod = offline_service.offline.get_pod("ml", "infer-l4-7f9c")
    assert pod["spec"]["nodeName"] == "gpu-l4-0"
    annotations = pod["metadata"]["annotations"]
    assigned = orjson.loads(annotations["gpu-extender.io/assigned"])
    assert assigned["node"] == "gpu-l4-0" and assigned["kind"] == "whole"
    assert annotations["gpu-extender.io/visible-devices"] == str(assigned["gpus"][0]["index"])
    holding = offline_service.inventory.holding("0b8e1f7a-5c1d-4a8e-9b1e-3f2a7c9d0e11")
    assert holding is not None and holding.state.value == "observed"
    # retried bind (kube did not get the answer): still a success
    assert post(client, "/bind", fixture_bytes("bind_typed.json")) == {"Error": ""}


def test_filter_before_the_first_sync_is_an_error(platform: Platform) -> None:
    service = ExtenderService.from_cluster_objects(platform,
                                                   load_cluster_file(DATA / "cluster.json"))
    client = create_app(service).test_client()  # not started: nothing loaded
    result = post(client, "/filter", fixture_bytes("filter_typed_nodenames.json"))
    assert result["Error"] == "inventory not synced yet"
    assert client.get("/readyz").status_code == 503
    assert post(client, "/prioritize", fixture_bytes("filter_typed_nodenames.json")) == []
    # pods without GPUs need no inventory
    assert post(client, "/filter", fixture_bytes("filter_no_gpu.json"))["Error"] == ""
    service.start()
    assert client.get("/readyz").status_code == 200
