"""The --cluster-file loader and the in-memory API server of offline mode."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from extender.apiserver.errors import Conflict, NotFound
from extender.inventory.store import HoldingState, Inventory
from extender.platform import Platform
from extender.sync.apply import InventoryApplier
from extender.sync.offline import (
    ClusterFileError,
    ClusterObjects,
    OfflineCluster,
    load_cluster_file,
    parse_cluster_document,
)
from tests.sync.clusters import l4_node, whole_pod

DATA = Path(__file__).resolve().parent.parent / "data"


def test_loads_kubectl_list_output() -> None:
    objects = load_cluster_file(DATA / "cluster.json")
    assert len(objects.nodes) == 7 and len(objects.pods) == 5


def test_accepts_yaml_and_typed_lists_and_skips_other_kinds(tmp_path: Path) -> None:
    document = {"apiVersion": "v1", "kind": "List", "items": [
        l4_node("n1"), {"kind": "Service", "metadata": {"name": "svc"}}, whole_pod("p")]}
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(document))
    objects = load_cluster_file(path)
    assert [n["metadata"]["name"] for n in objects.nodes] == ["n1"]
    assert [p["metadata"]["name"] for p in objects.pods] == ["p"]
    node_list = {"kind": "NodeList", "items": [{"metadata": {"name": "n2"}}]}
    assert parse_cluster_document(node_list).nodes == [{"metadata": {"name": "n2"}}]


@pytest.mark.parametrize(("document", "message"), [
    ({"kind": "Pod"}, "expected a kind: List"),
    ([], "expected a kind: List"),
    ({"kind": "List", "items": "x"}, "items: must be a list"),
    ({"kind": "List", "items": [3]}, "items[0]: must be an object"),
    ({"kind": "List", "items": [{"kind": "Node", "metadata": {}}]},
     "items[0].metadata.name: required"),
])
def test_rejects_what_is_not_a_list_of_nodes_and_pods(document: object, message: str) -> None:
    with pytest.raises(ClusterFileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_cluster_document(document)


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match="cannot read"):
        load_cluster_file(tmp_path / "missing.json")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{: [")
    with pytest.raises(ClusterFileError, match="neither JSON nor YAML"):
        load_cluster_file(garbage)


def test_offline_binds_behave_like_the_api_and_feed_the_inventory(platform: Platform) -> None:
    inventory = Inventory(platform.catalog)
    cluster = OfflineCluster(InventoryApplier(platform, inventory), inventory)
    cluster.load(ClusterObjects([l4_node("n1")], []))
    assert inventory.has_synced()
    pod = whole_pod("p")
    with pytest.raises(NotFound):
        cluster.get_pod("ml", "p")
    cluster.admit(pod)
    cluster.admit({**pod, "spec": {}})  # a second sight changes nothing
    with pytest.raises(Conflict, match="UID"):
        cluster.patch_pod_annotations("ml", "p", "other-uid", {"a": "b"})
    assignment = {"version": 1, "node": "n1", "kind": "whole", "type": "l4", "generation": 1,
                  "gpus": [{"index": 2, "vramMiB": 23034, "whole": True}]}
    cluster.patch_pod_annotations("ml", "p", "uid-p", {
        "gpu-extender.io/assigned": orjson.dumps(assignment).decode()})
    cluster.create_binding("ml", "p", "uid-p", "n1")
    holding = inventory.holding("uid-p")
    assert holding is not None and holding.state is HoldingState.OBSERVED
    assert holding.assignment is not None and holding.assignment.gpu_indices == (2,)
    with pytest.raises(Conflict, match="already assigned"):
        cluster.create_binding("ml", "p", "uid-p", "n1")
    assert cluster.get_pod("ml", "p")["spec"]["nodeName"] == "n1"
