"""Hostile and careless clients, generated: every answer is well formed, nothing is a 5xx or an
"internal error", no answer takes long, and the per-GPU invariants hold after any sequence; a
preemption question about the pods bound by then names only pods it was offered.

The pods are built from a valid one by replacing parts with arbitrary JSON and by hostile GPU
amounts, so hypothesis shrinks a failure to the one part that broke it (a readable pod, not a
seed). The service is the real one, over the offline cluster (``OfflineCluster`` is the API a
user can also run: ``gpu-extender serve --cluster-file``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from extender.kube.shape import has_pod_shape
from extender.platform import Platform
from extender.server.app import create_app
from extender.server.service import ExtenderService
from extender.sync.offline import load_cluster_file
from tests.careless_json import json_scalars, json_values, set_part
from tests.server.conftest import DATA
from tests.server.invariants import assert_gpu_invariants

NODES = ["gpu-t4-0", "gpu-t4-1", "gpu-l4-0", "gpu-a10g-shared-0", "gpu-a100-0",
         "gpu-a100-mig-0", "cpu-0"]
ANSWER_BOUND_S = 2.0
"""Generous: an answer costs about a millisecond; a quadratic parse or a stall costs seconds."""

HOSTILE_AMOUNTS = ["1e400", "1e450000", "1e18", "1e20", "9223372036854775807", 2**62, 2**70,
                   "-1", "0.5", "1.5", "0", "1", "2", "8", "20000", "1Pi", "4Gi", "1e-101",
                   True, None, [], {}, "", "NaN", " 1 "]
GPU_RESOURCES = ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb",
                 "nvidia.com/mig-3g.40gb", "nvidia.com/mig-9g.99gb", "gpu-extender.io/gpu-memory",
                 "gpu-extender.io/gpu-milli", "cpu", "memory"]

# Where a careless client can put a wrong value: each path is a part some decoder reads.
PARTS: list[tuple[str | int, ...]] = [
    ("metadata",), ("metadata", "labels"), ("metadata", "annotations"),
    ("metadata", "labels", "gpu-extender.io/accelerator"),
    ("metadata", "annotations", "gpu-extender.io/accelerators"),
    ("metadata", "uid"), ("metadata", "name"), ("spec",), ("spec", "containers"),
    ("spec", "containers", 0), ("spec", "containers", 0, "resources"),
    ("spec", "containers", 0, "resources", "limits"), ("spec", "nodeSelector"),
    ("spec", "affinity"), ("spec", "initContainers"), ("spec", "overhead"), ("status",),
]


def base_pod(uid: str, resource: str, amount: object) -> dict[str, Any]:
    return {"metadata": {"name": f"fuzz-{uid}", "namespace": "ml", "uid": uid,
                         "resourceVersion": "1"},
            "spec": {"containers": [{"name": "main",
                                     "resources": {"limits": {resource: amount}}}]}}


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    uid = draw(st.uuids()).hex[:12]
    pod = base_pod(uid, draw(st.sampled_from(GPU_RESOURCES)),
                   draw(st.sampled_from(HOSTILE_AMOUNTS) | json_scalars))
    for path in draw(st.lists(st.sampled_from(PARTS), max_size=3, unique=True)):
        set_part(pod, path, draw(json_values))
    # as the server will see it: through JSON (orjson reads an integer beyond 64 bits as a float)
    decoded: dict[str, Any] = orjson.loads(json.dumps(pod))
    return decoded


node_names = st.lists(st.sampled_from(NODES) | st.text(max_size=12), max_size=8)


@pytest.fixture(scope="module")
def service(platform: Platform) -> Iterator[ExtenderService]:
    service = ExtenderService.from_cluster_objects(platform,
                                                   load_cluster_file(DATA / "cluster.json"))
    service.start()
    yield service
    service.stop()


@pytest.fixture(scope="module")
def fuzz_client(service: ExtenderService) -> FlaskClient:
    return create_app(service).test_client()


def well_formed(path: str, body: bytes, client: FlaskClient) -> Any:
    started = time.perf_counter()
    response = client.post(path, data=body, content_type="application/json")
    elapsed = time.perf_counter() - started
    assert elapsed < ANSWER_BOUND_S, f"{path} took {elapsed:.2f}s"
    assert response.status_code in (200, 400, 413), (response.status_code, response.data)
    assert b"Traceback" not in response.data
    document = orjson.loads(response.data)
    if isinstance(document, dict):
        error = str(document.get("Error") or "")
        assert "internal error" not in error, error
    return document


SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(pod=pods(), names=node_names)
def test_filter_and_prioritize_answer_every_pod_well(fuzz_client: FlaskClient,
                                                     pod: dict[str, Any], names: list[str]
                                                     ) -> None:
    body = orjson.dumps({"Pod": pod, "NodeNames": names})
    answer = well_formed("/filter", body, fuzz_client)
    assert set(answer) >= {"FailedNodes", "FailedAndUnresolvableNodes"}
    priorities = well_formed("/prioritize", body, fuzz_client)
    assert isinstance(priorities, list)
    for entry in priorities:
        assert entry["Host"] in names and 0 <= entry["Score"] <= 10


@SETTINGS
@given(document=json_values)
def test_any_json_body_is_answered_without_a_5xx(fuzz_client: FlaskClient,
                                                 document: object) -> None:
    for path in ("/filter", "/prioritize", "/bind", "/preempt"):
        well_formed(path, orjson.dumps(document), fuzz_client)


victims = st.dictionaries(
    st.sampled_from(NODES) | st.text(max_size=12),
    st.none() | json_values | st.fixed_dictionaries(
        {"Pods": st.lists(st.fixed_dictionaries({"UID": st.text(max_size=8) | json_scalars})
                          | json_values, max_size=4),
         "NumPDBViolations": st.integers(-3, 3) | json_scalars}),
    max_size=5)


@SETTINGS
@given(pod=pods(), meta=victims, meta_form=st.booleans())
def test_preempt_answers_every_pod_and_victims_map_well(fuzz_client: FlaskClient,
                                                        pod: dict[str, Any],
                                                        meta: dict[str, Any],
                                                        meta_form: bool) -> None:
    field = "NodeNameToMetaVictims" if meta_form else "NodeNameToVictims"
    answer = well_formed("/preempt", orjson.dumps({"Pod": pod, field: meta}), fuzz_client)
    assert isinstance(answer, dict)
    for node, chosen in (answer.get("NodeNameToMetaVictims") or {}).items():
        assert node in meta, (node, meta)
        assert chosen["Pods"], chosen  # a node is answered only with victims (1.36 fails on [])


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=st.lists(st.tuples(pods(), st.sampled_from(NODES)), min_size=1, max_size=8))
@example(sequence=[({**base_pod("null-spec", "nvidia.com/gpu", 1), "spec": None}, "gpu-t4-0")])
def test_invariants_hold_after_any_sequence_of_verbs(fuzz_client: FlaskClient,
                                                     service: ExtenderService,
                                                     sequence: list[tuple[dict[str, Any], str]]
                                                     ) -> None:
    offline = service.offline
    assert offline is not None
    for pod, node in sequence:
        meta = pod.get("metadata")
        if has_pod_shape(pod):
            offline.admit(pod)  # it exists in the cluster: the API server holds only valid pods
        body = orjson.dumps({"Pod": pod, "NodeNames": NODES})
        well_formed("/filter", body, fuzz_client)
        well_formed("/prioritize", body, fuzz_client)
        well_formed("/bind", orjson.dumps({
            "PodName": (meta or {}).get("name") if isinstance(meta, dict) else "x",
            "PodNamespace": "ml",
            "PodUID": (meta or {}).get("uid") if isinstance(meta, dict) else "x",
            "Node": node}), fuzz_client)
    assert_gpu_invariants(offline.pods(), service.inventory)
    # then a pod of a higher priority asks kube-scheduler's question about every bound pod
    offered: dict[str, list[dict[str, str]]] = {}
    for bound in offline.pods():  # admitted pods are well shaped: a part may still be null
        node = (bound.get("spec") or {}).get("nodeName")
        if node:
            offered.setdefault(node, []).append({"UID": bound["metadata"]["uid"]})
    pod = dict(sequence[-1][0])
    if isinstance(pod.get("spec"), dict):
        pod["spec"] = {**pod["spec"], "priority": 10**6}
    answer = well_formed("/preempt", orjson.dumps({"Pod": pod, "NodeNameToMetaVictims": {
        node: {"Pods": uids, "NumPDBViolations": 0} for node, uids in offered.items()}}),
        fuzz_client)
    for node, chosen in answer.get("NodeNameToMetaVictims", {}).items():
        assert {p["UID"] for p in chosen["Pods"]} <= {p["UID"] for p in offered[node]}

