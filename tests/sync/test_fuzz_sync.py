"""Hostile pods and annotations through the watch, a relist and the cluster file (issues 19
and 20): the same generated pods the verb fuzz sends (``tests/server/test_fuzz.py``), bound, with
``assigned``/``assigned-observed`` annotations built from a valid one with parts replaced by
arbitrary JSON and hostile numbers.

After any sequence: no exception escapes the applier, a pod of a wrong shape gets a problem,
every counted assignment matches its pod's own request, and deleting every pod leaves each GPU
exactly as its node describes it (no partial apply, nothing leaked). The cluster file with the
same pods, one nested 300 deep among them, loads and serves.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.inventory.store import Inventory
from extender.kube.annotations import encode_assignment
from extender.kube.shape import ShapeError, check_pod
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_OBSERVED,
    Assignment,
    GpuGrant,
    RequestKind,
)
from extender.platform import Platform
from extender.server.app import create_app
from extender.server.service import ExtenderService
from extender.sync.apply import InventoryApplier
from extender.sync.offline import load_cluster_file
from extender.sync.trust import invalid_request, mismatch
from tests.careless_json import json_values, set_part
from tests.server.test_fuzz import pods
from tests.sync.clusters import mig_node, shared_node, t4_node

NODES = [t4_node("t4-0"), mig_node("mig-0"), shared_node("shared-0")]
NODE_NAMES = ["t4-0", "mig-0", "shared-0", "gone"]
HOSTILE_NUMBERS = [-1, 0, 1, 7, 8, 9, 255, 256, 2**15, 2**31, 99999999999, 2**63, 10**30,
                   1.5, True, None, "3", [], {}]
VALID = [Assignment("t4-0", RequestKind.WHOLE, (GpuGrant(0, 15360, whole=True),), "t4"),
         Assignment("t4-0", RequestKind.VRAM, (GpuGrant(1, 6144, uuid="GPU-x"),), "t4"),
         Assignment("mig-0", RequestKind.MIG, (GpuGrant(0, 9728, mig_profile="1g.10gb",
                                                        mig_start=0, mig_slices=1),), ""),
         Assignment("shared-0", RequestKind.SHARED, (GpuGrant(0, 5757, replica=True),), "")]
# Where a hostile annotation differs from a valid one.
ANNOTATION_PARTS: list[tuple[str | int, ...]] = [
    ("node",), ("kind",), ("version",), ("gpus",), ("gpus", 0), ("gpus", 0, "index"),
    ("gpus", 0, "vramMiB"), ("gpus", 0, "uuid"), ("gpus", 0, "whole"), ("gpus", 0, "replica"),
    ("gpus", 0, "mig"), ("gpus", 0, "mig", "start"), ("gpus", 0, "mig", "slices"),
    ("gpus", 0, "mig", "profile"), ("generation",),
]


@st.composite
def annotations(draw: st.DrawFn) -> str:
    document = orjson.loads(encode_assignment(draw(st.sampled_from(VALID))))
    for path in draw(st.lists(st.sampled_from(ANNOTATION_PARTS), max_size=3, unique=True)):
        set_part(document, path, draw(st.sampled_from(HOSTILE_NUMBERS) | json_values))
    grants = document.get("gpus") if isinstance(document, dict) else None
    if isinstance(grants, list) and draw(st.booleans()):  # many: past the 64 a pod may have
        document["gpus"] = grants * draw(st.sampled_from([2, 30, 65]))
    return json.dumps(document)


@st.composite
def bound_pods(draw: st.DrawFn) -> dict[str, Any]:
    pod = draw(pods())
    spec = pod.get("spec")
    if isinstance(spec, dict) and draw(st.booleans()):
        spec["nodeName"] = draw(st.sampled_from(NODE_NAMES))
    meta = pod.get("metadata")
    if isinstance(meta, dict):
        notes = meta.get("annotations")
        if not isinstance(notes, dict):
            notes = meta["annotations"] = {}
        for key in draw(st.lists(st.sampled_from([ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED]),
                                 unique=True)):
            notes[key] = draw(annotations())
    return pod


def pristine(inventory: Inventory) -> None:
    """Every GPU as its node describes it: nothing held, nothing half-applied."""
    snapshot = inventory.snapshot()
    present = snapshot.present
    assert (snapshot.free_mib[present] == snapshot.total_mib[present]).all()
    assert (snapshot.pods == 0).all()
    assert (snapshot.replicas_free == snapshot.replicas).all()
    assert inventory.holdings() == []


def counted_matches_request(platform: Platform, inventory: Inventory,
                            by_uid: dict[str, dict[str, Any]]) -> None:
    for holding in inventory.holdings():
        if holding.assignment is None:
            continue
        pod = by_uid[holding.key.uid]
        info = platform.pods.decode(pod)
        if invalid_request(info):
            continue  # keeps its first assignment: what it really holds must not read free
        assert mismatch(holding.assignment, info.request, None) is None, holding


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(sequence=st.lists(st.tuples(st.sampled_from(["ADDED", "MODIFIED"]), bound_pods()),
                         min_size=1, max_size=8))
def test_the_watch_and_a_relist_take_any_pod(platform: Platform,
                                             sequence: list[tuple[str, dict[str, Any]]]) -> None:
    inventory = Inventory(platform.catalog)
    applier = InventoryApplier(platform, inventory)
    applier.replace_nodes(NODES)
    by_uid: dict[str, dict[str, Any]] = {}
    for event_type, pod in sequence:
        info = platform.pods.decode(pod)
        try:
            check_pod(pod)
        except ShapeError:
            assert info.problems, "a pod of a wrong shape gets a problem"
        applier.pod_event(event_type, pod)
        if info.key.uid:
            by_uid[info.key.uid] = pod
        counted_matches_request(platform, inventory, by_uid)
    applier.node_event("MODIFIED", t4_node("t4-0", 2))  # a node update re-applies its pods
    applier.replace_nodes(NODES)
    applier.replace_pods([pod for _, pod in sequence])  # a relist after a 410
    counted_matches_request(platform, inventory, by_uid)
    for _, pod in sequence:
        applier.pod_event("DELETED", pod)
    pristine(inventory)
    applier.replace_pods([pod for _, pod in sequence])
    applier.replace_pods([])
    pristine(inventory)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(bound_pods(), min_size=1, max_size=6))
def test_the_cluster_file_takes_any_pod(platform: Platform, tmp_path_factory: Any,
                                        items: list[dict[str, Any]]) -> None:
    nested = functools.reduce(lambda inner, _: {"a": inner}, range(300), {})
    deep = {"metadata": {"name": "deep", "namespace": "ml", "uid": "uid-deep"},
            "spec": {"nodeName": "t4-0", "containers": [
                {"name": "m", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
            "x": nested}
    pods_ = [p | {"kind": "Pod"} for p in items if isinstance(p.get("metadata"), dict)
             and isinstance(p["metadata"].get("name"), str) and p["metadata"]["name"]]
    document = {"kind": "List", "items": [n | {"kind": "Node"} for n in NODES] + pods_ +
                [deep | {"kind": "Pod"}]}
    path = Path(tmp_path_factory.mktemp("cluster")) / "cluster.json"
    path.write_text(json.dumps(document))  # json: orjson refuses 300 levels
    service = ExtenderService.from_cluster_objects(platform, load_cluster_file(path))
    service.start()
    try:
        assert service.ready()
        client = create_app(service).test_client()
        # a pod not in the file: the offline cluster admits it (it copied it: "internal
        # error ... Recursion limit reached" before)
        pending = deep | {"metadata": {"name": "deep-2", "namespace": "ml", "uid": "u-d2"},
                          "spec": {"containers": deep["spec"]["containers"]}}
        response = client.post("/filter", data=json.dumps(
            {"Pod": pending, "NodeNames": ["t4-0"]}), content_type="application/json")
        answer = orjson.loads(response.data)
        assert answer["Error"] == "", answer
        assert "nested" in answer["FailedAndUnresolvableNodes"]["t4-0"]
        snapshot = service.inventory.snapshot()
        assert (snapshot.pods >= 0).all()
        assert np.all(snapshot.replicas_free[snapshot.present] >= 0) or \
            service.inventory.conflicts_total > 0
    finally:
        service.stop()
