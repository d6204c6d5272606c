"""Accessors for object JSON: what a present, an absent and a ``null`` field read as."""

from __future__ import annotations

from typing import Any

import pytest

from extender.kube import objects
from extender.model import PodKey

P = pytest.param

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ml", "uid": "u1", "resourceVersion": "42",
                 "labels": {"app": "train"}, "annotations": {"a": "b"}},
    "spec": {"nodeName": "n1"},
}


def test_a_full_pod_reads_back_every_field() -> None:
    assert objects.pod_key(POD) == PodKey("ml", "p", "u1")
    assert objects.resource_version(POD) == "42"
    assert objects.labels(POD) == {"app": "train"}
    assert objects.annotations(POD) == {"a": "b"}
    assert objects.node_name(POD) == "n1"


@pytest.mark.parametrize("obj", [
    P({}, id="no metadata, no spec"),
    P({"metadata": None, "spec": None}, id="null metadata and spec (hand-written dumps)"),
    P({"metadata": {"name": None, "labels": None, "annotations": None},
       "spec": {"nodeName": None}}, id="null fields"),
])
def test_absent_or_null_fields_read_as_empty(obj: dict[str, Any]) -> None:
    assert objects.pod_key(obj) == PodKey("", "", "")
    assert objects.resource_version(obj) == ""
    assert objects.labels(obj) == {} and objects.annotations(obj) == {}
    assert objects.node_name(obj) == ""


def test_a_list_answers_its_metadata() -> None:
    page = {"metadata": {"resourceVersion": "7", "continue": "tok"}, "items": []}
    assert objects.meta(page)["continue"] == "tok"
    assert objects.resource_version(page) == "7"
