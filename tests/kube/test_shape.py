"""Pod and Node shapes checked at the edge: every wrong JSON type is named by its field path,
shown as JSON, with what is accepted; deep nesting is refused before any encoder sees it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.kube.shape import MAX_DEPTH, ShapeError, check_depth, check_node, check_pod

P = pytest.param


def pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                     "labels": {"gpu-extender.io/accelerator": "t4"},
                     "annotations": {"gpu-extender.io/accelerators": "t4,l4"}},
        "spec": {
            "schedulerName": "gpu-scheduler",
            "nodeSelector": {"nvidia.com/gpu.product": "Tesla-T4"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "k", "operator": "In", "values": ["a", "b"]}]}]}}},
            "containers": [{"name": "main", "resources": {
                "limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": 2, "memory": "1Gi"}}}],
            "initContainers": [{"name": "init", "restartPolicy": "Always"}],
            "overhead": {"cpu": "100m"},
        },
        "status": {"phase": "Pending"},
    }


def with_value(path: list[str | int], value: object) -> dict[str, Any]:
    document = copy.deepcopy(pod())
    target: Any = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


def test_a_well_formed_pod_passes() -> None:
    check_pod(pod())


def test_absent_and_null_parts_pass_because_decoders_default_them() -> None:
    check_pod({})
    check_pod({"metadata": None, "spec": {"containers": None}})


AFFINITY = ["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]


@pytest.mark.parametrize(
    ("path", "value", "field", "shown"),
    [
        P(["metadata"], 7, "metadata", "7", id="metadata a number (was an HTTP 500)"),
        P(["metadata", "labels"], ["a"], "metadata.labels", '["a"]', id="labels a list"),
        P(["metadata", "annotations", "x"], True, "metadata.annotations[x]", "true",
          id="an annotation value true, shown as JSON true, not Python True"),
        P(["metadata", "uid"], {"x": 1}, "metadata.uid", '{"x":1}', id="uid an object"),
        P(["spec"], "spec", "spec", '"spec"', id="spec a string"),
        P(["spec", "containers"], {"name": "c"}, "spec.containers", '{"name":"c"}',
          id="containers an object, not a list"),
        P(["spec", "containers", 0], "main", "spec.containers[0]", '"main"',
          id="a container that is a string"),
        P(["spec", "containers", 0, "resources"], [1], "spec.containers[0].resources", "[1]",
          id="resources a list"),
        P(["spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"], [1],
          "spec.containers[0].resources.limits[nvidia.com/gpu]", "[1]",
          id="a limit that is a list"),
        P(["spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"], True,
          "spec.containers[0].resources.limits[nvidia.com/gpu]", "true",
          id="a limit that is a boolean (an int to Python, not a quantity)"),
        P(["spec", "nodeSelector"], "t4", "spec.nodeSelector", '"t4"', id="nodeSelector a string"),
        P(["spec", "nodeSelector", "k"], None, "spec.nodeSelector[k]", "null",
          id="a nodeSelector value null"),
        P(["spec", "affinity"], [], "spec.affinity", "[]", id="affinity a list"),
        P([*AFFINITY, "nodeSelectorTerms"], {}, "spec.affinity.nodeAffinity."
          "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "{}",
          id="nodeSelectorTerms an object"),
        P([*AFFINITY, "nodeSelectorTerms", 0, "matchExpressions", 0, "values"], "a",
          "nodeSelectorTerms[0].matchExpressions[0].values", '"a"', id="values a string"),
        P(["spec", "overhead"], 3, "spec.overhead", "3", id="overhead a number"),
        P(["spec", "tolerations"], True, "spec.tolerations", "true",
          id="tolerations a boolean (the kube filters iterate them)"),
        P(["spec", "tolerations"], [{"key": 1}], "spec.tolerations[0].key", "1",
          id="a toleration's key a number"),
        P(["spec", "containers", 0, "ports"], 80, "spec.containers[0].ports", "80",
          id="ports a number (the host-port filter iterates them)"),
        P(["spec", "containers", 0, "ports"], ["80"], "spec.containers[0].ports[0]", '"80"',
          id="a port a string"),
        P(["spec", "resources"], [], "spec.resources", "[]", id="pod-level resources a list"),
        P(["status", "phase"], 1, "status.phase", "1", id="phase a number"),
    ],
)
def test_each_wrong_type_names_its_field_and_shows_the_value_as_json(
        path: list[str | int], value: object, field: str, shown: str) -> None:
    with pytest.raises(ShapeError) as raised:
        check_pod(with_value(path, value))
    message = str(raised.value)
    assert field in message
    assert f"={shown}:" in message
    assert "must be" in message


def test_the_error_is_a_request_error_so_the_pod_is_answered_as_invalid() -> None:
    from extender.errors import RequestError
    with pytest.raises(RequestError):
        check_pod({"metadata": 7})


def test_a_long_value_is_cut_in_the_message() -> None:
    with pytest.raises(ShapeError) as raised:
        check_pod({"metadata": {"labels": ["x" * 1000]}})
    assert len(str(raised.value)) < 200


def nested(levels: int) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for _ in range(levels):
        document = {"a": document}
    return document


def test_nesting_up_to_the_limit_passes_and_one_more_is_refused() -> None:
    # nested(n) has n dicts inside the outermost: depth n
    check_depth(nested(MAX_DEPTH), "Pod")
    with pytest.raises(ShapeError, match=f"nested at most {MAX_DEPTH} levels"):
        check_depth(nested(MAX_DEPTH + 1), "Pod")


def test_a_pod_nested_300_levels_deep_in_a_part_we_never_read_is_refused() -> None:
    document = pod()
    document["spec"]["volumes"] = [nested(300)]
    with pytest.raises(ShapeError, match="Pod"):
        check_pod(document)


def test_depth_check_is_iterative_and_survives_recursion_limit_depths() -> None:
    lists: list[Any] = []
    for _ in range(5000):
        lists = [lists]
    with pytest.raises(ShapeError):
        check_depth(lists, "Nodes.items[0]")


@pytest.mark.parametrize(
    ("node", "field"),
    [
        P({"metadata": {"labels": 1}}, "metadata.labels", id="labels a number"),
        P({"status": {"allocatable": []}}, "status.allocatable", id="allocatable a list"),
        P({"status": {"allocatable": {"nvidia.com/gpu": {}}}},
          "status.allocatable[nvidia.com/gpu]", id="an allocatable object"),
        P({"spec": {"unschedulable": "yes"}}, "spec.unschedulable", id="unschedulable a string"),
        P({"spec": {"taints": [{"key": 1}]}}, "spec.taints[0].key", id="a taint key a number"),
    ],
)
def test_node_shapes(node: dict[str, Any], field: str) -> None:
    with pytest.raises(ShapeError, match=field.replace("[", r"\[").replace("]", r"\]")):
        check_node(node, "")
    check_node({"metadata": {"name": "n", "labels": {"a": "b"}},
                "status": {"allocatable": {"nvidia.com/gpu": "8"}}})
