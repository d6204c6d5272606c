"""manifests/rbac.yaml, installed unchanged by the local cluster, grants the extender what the
one-write bind uses and nothing more: it reads pods and nodes, creates Bindings and Events, and
may not patch or update a pod (the annotations ride on the Binding). Proved twice against the
real API server: by SubjectAccessReview, and by the extender's own client being refused."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from extender.apiserver.binder import Binder
from extender.apiserver.client import ApiServerClient
from extender.model import ANNOTATION_ASSIGNED, Assignment, GpuGrant, PodKey, RequestKind
from localcluster import LocalCluster

pytestmark = pytest.mark.e2e
EXTENDER = "system:serviceaccount:kube-system:gpu-extender"


def allowed(cluster: LocalCluster, verb: str, resource: str, subresource: str = "") -> bool:
    review = client.AuthorizationV1Api(cluster.api_client()).create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": EXTENDER, "groups": ["system:serviceaccounts",
                                              "system:serviceaccounts:kube-system",
                                              "system:authenticated"],
                 "resourceAttributes": {"namespace": "default", "verb": verb, "group": "",
                                        "resource": resource, "subresource": subresource}}})
    return bool(review.status.allowed)


GRANTS = [
    ("get", "pods", "", True), ("list", "pods", "", True), ("watch", "pods", "", True),
    ("create", "pods", "binding", True), ("create", "events", "", True),
    ("patch", "pods", "", False), ("update", "pods", "", False),
    ("delete", "pods", "", False), ("create", "pods", "eviction", False),
]


def test_the_extender_binds_without_pod_patch_and_cannot_patch(
        controlplane_binaries: object) -> None:
    with LocalCluster(None, None) as cluster:
        judged = [(verb, resource, sub, allowed(cluster, verb, resource, sub))
                  for verb, resource, sub, _ in GRANTS]
        assert judged == GRANTS
        cluster.create_node("n1", {"nvidia.com/gpu": 1})
        created = cluster.api().create_namespaced_pod("default", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"schedulerName": "nobody",
                     "containers": [{"name": "main", "image": "registry.example/app:1"}]}})
        extender = cluster.api("gpu-extender")
        with pytest.raises(ApiException) as refused:
            extender.patch_namespaced_pod("p", "default",
                                          {"metadata": {"annotations": {"a": "b"}}})
        assert refused.value.status == 403
        # the one-write bind: the Binding carries the annotations, no pod patch needed
        writer = ApiServerClient(cluster.api_client("gpu-extender"))
        Binder(writer).bind(PodKey("default", "p", created.metadata.uid), "n1", Assignment(
            "n1", RequestKind.WHOLE, (GpuGrant(0, 15360, whole=True),), "t4"))
        bound = cluster.api().read_namespaced_pod("p", "default")
        assert bound.spec.node_name == "n1"
        assert ANNOTATION_ASSIGNED in bound.metadata.annotations
