"""What-if on careless manifests, generated: a workload or pod whose parts are null, of the
wrong JSON type or arbitrary is either replayed or refused with problems that name where
(``ManifestError``), never a stack trace. Each manifest starts from a valid one and has parts
replaced, so hypothesis shrinks a failure to the one part that broke it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from extender.cli import main
from extender.platform import Platform
from extender.sync.offline import ClusterObjects, load_cluster_file
from extender.whatif.manifests import ManifestError, load_pod_manifests
from extender.whatif.replay import what_if
from tests.careless_json import json_values, parts_of, set_part

DATA = Path(__file__).resolve().parent.parent / "data"

CONTAINER = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
POD_SPEC = {"containers": [CONTAINER]}
TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": POD_SPEC}
VALID: dict[str, dict[str, Any]] = {
    "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": POD_SPEC},
    "Deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": 2, "template": TEMPLATE}},
    "StatefulSet": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                    "spec": {"replicas": 2, "template": TEMPLATE}},
    "Job": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"parallelism": 2, "template": TEMPLATE}},
    "CronJob": {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                "spec": {"jobTemplate": {"spec": {"parallelism": 1, "template": TEMPLATE}}}},
    "List": {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "l"}, "spec": POD_SPEC}]},
    "PodList": {"apiVersion": "v1", "kind": "PodList", "items": [
        {"metadata": {"name": "pl"}, "spec": POD_SPEC}]},
}
POD_PARTS: list[tuple[str | int, ...]] = [
    ("metadata",), ("metadata", "name"), ("metadata", "namespace"), ("metadata", "labels"),
    ("spec",), ("spec", "containers"), ("spec", "containers", 0),
    ("spec", "containers", 0, "resources"), ("spec", "containers", 0, "resources", "limits"),
    ("spec", "nodeSelector"), ("spec", "affinity"), ("spec", "tolerations"),
    ("spec", "nodeName"), ("status",)]
WORKLOAD_PARTS: list[tuple[str | int, ...]] = [
    ("metadata",), ("metadata", "name"), ("spec",), ("spec", "replicas"),
    ("spec", "parallelism"), ("spec", "template"), ("spec", "template", "metadata"),
    ("spec", "template", "spec"), ("spec", "jobTemplate"), ("spec", "jobTemplate", "spec"),
    ("spec", "jobTemplate", "spec", "template"), ("spec", "jobTemplate", "spec", "template",
                                                  "metadata"),
    ("items",), ("items", 0), ("items", 0, "metadata"), ("items", 0, "spec")]


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(VALID)))
    document = copy.deepcopy(VALID[kind])
    parts = POD_PARTS + [("spec", "template", "spec", *p[1:]) for p in POD_PARTS
                         if p[0] == "spec"] + WORKLOAD_PARTS
    for path in draw(st.lists(st.sampled_from(parts), max_size=3, unique=True)):
        set_part(document, path, draw(json_values))
    return document


@pytest.fixture(scope="module")
def cluster() -> ClusterObjects:
    return load_cluster_file(DATA / "cluster.json")


SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(document=manifests(), as_yaml=st.booleans())
@example(document={**VALID["Deployment"], "spec": {"replicas": 1, "template": {
    "metadata": None, "spec": POD_SPEC}}}, as_yaml=True)
@example(document={**VALID["CronJob"], "spec": {"jobTemplate": []}}, as_yaml=False)
@example(document={**VALID["Deployment"], "spec": "three replicas"}, as_yaml=False)
def test_a_careless_manifest_is_replayed_or_refused_with_its_problems(
        tmp_path_factory: pytest.TempPathFactory, platform: Platform,
        cluster: ClusterObjects, document: dict[str, Any], as_yaml: bool) -> None:
    folder = tmp_path_factory.mktemp("manifests")
    if as_yaml:
        path = folder / "m.yaml"
        path.write_text(yaml.safe_dump(document))
    else:
        path = folder / "m.json"
        path.write_bytes(orjson.dumps(document))
    try:
        pods = load_pod_manifests(path)
    except ManifestError as error:
        assert error.problems and all(str(path) in p for p in error.problems), error.problems
        return
    [run] = what_if(platform, cluster, pods, ["cost-fragmentation"])
    assert len(run.outcomes) == len(pods)


CLUSTER: dict[str, Any] = orjson.loads((DATA / "cluster.json").read_bytes())
EXAMPLES = DATA.parent.parent / "manifests" / "examples"


CLUSTER_PARTS = [p for p in parts_of(CLUSTER) if p[0] == "items" and len(p) > 2]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(CLUSTER_PARTS), json_values), min_size=1,
                        max_size=3))
def test_a_careless_cluster_file_is_shown_or_refused_with_a_message(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
        changes: list[tuple[tuple[str | int, ...], object]]) -> None:
    # a hand-edited dump: objects an API server would never hold are left out (warned) or
    # the file is refused; inspect and what-if answer either way, never with a stack trace
    document = copy.deepcopy(CLUSTER)
    for path, value in changes:
        set_part(document, path, value)
    path = tmp_path_factory.mktemp("cluster") / "cluster.json"
    path.write_bytes(orjson.dumps(document))
    assert main(["inspect", "--cluster-file", str(path), "-d"]) in (0, 1, 2)
    assert main(["what-if", "--cluster-file", str(path), "--pods", str(EXAMPLES)]) in (0, 1, 2)
    assert "Traceback" not in capsys.readouterr().err
