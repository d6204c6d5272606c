"""/validate judges the node agent's Evictions: the pod the review names must be bound to the
node in the agent's token (``userInfo.extra``); the review decoded as the API server sends it
for ``pods/eviction``. The real API server's part: ``tests/e2e/test_agent_evictions.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from extender.apiserver.errors import KubeError, NotFound
from extender.webhook.admit import PodAdmission
from extender.webhook.evictions import NODE_NAME_EXTRA, AgentEvictions
from extender.webhook.review import decode_review
from tests.builders import make_pod
from tests.webhook.helpers import platform_with

P = pytest.param
AGENT = "system:serviceaccount:gpu:gpu-extender-agent"
PODS = {("ml", "mine"): make_pod("mine").node_name("n1").obj(),
        ("ml", "theirs"): make_pod("theirs").node_name("n2").obj(),
        ("ml", "pending"): make_pod("pending").obj()}


def get_pod(namespace: str, name: str) -> Mapping[str, Any]:
    if name == "unreadable":
        raise KubeError("get pod ml/unreadable: HTTP 503", status=503)
    pod = PODS.get((namespace, name))
    if pod is None:
        raise NotFound(f"get pod {namespace}/{name}: HTTP 404", status=404)
    return pod


def eviction_review(pod: str, user: str = AGENT, node: str | None = "n1") -> bytes:
    """An AdmissionReview as the API server sends it for ``pods/eviction`` CREATE."""
    extra = {NODE_NAME_EXTRA: [node], "authentication.kubernetes.io/pod-name": ["agent-x"]} \
        if node is not None else {}
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "request": {
        "uid": "u1", "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "subResource": "eviction", "name": pod, "namespace": "ml", "operation": "CREATE",
        "userInfo": {"username": user, "extra": extra},
        "object": {"apiVersion": "policy/v1", "kind": "Eviction",
                   "metadata": {"name": pod, "namespace": "ml"}}}})


WEBHOOK = PodAdmission(platform_with({}), evictions=AgentEvictions(frozenset({AGENT}), get_pod))


@pytest.mark.parametrize(("body", "allowed", "outcome", "fragment"), [
    P(eviction_review("mine"), True, "eviction-own-node", "", id="a pod on its own node"),
    P(eviction_review("theirs"), False, "eviction-other-node",
      "the gpu-extender agent of node 'n1' may evict only pods bound to that node; pod "
      "ml/theirs is on node 'n2'", id="a pod on another node"),
    P(eviction_review("pending"), False, "eviction-other-node", "is not bound to a node",
      id="an unbound pod"),
    P(eviction_review("theirs", node=None), False, "eviction-no-node-claim",
      "its token names none (userInfo.extra[authentication.kubernetes.io/node-name])",
      id="a token without the node claim"),
    P(eviction_review("gone"), True, "eviction-gone", "",
      id="a pod that is gone: the API server answers 404 itself"),
    P(eviction_review("unreadable"), False, "eviction-unreadable",
      "cannot read pod ml/unreadable to check that it is on node 'n1'",
      id="the pod cannot be read: closed"),
    P(eviction_review("theirs", user="system:serviceaccount:ml:drainer"), True,
      "eviction-not-the-agent", "", id="someone else's Eviction is not this check's"),
])
def test_the_agents_evictions(body: bytes, allowed: bool, outcome: str, fragment: str) -> None:
    answer = WEBHOOK.validate(decode_review(body))
    assert (answer.allowed, answer.outcome) == (allowed, outcome)
    assert fragment in answer.message


def test_without_the_check_an_eviction_is_not_judged() -> None:
    answer = PodAdmission(platform_with({})).validate(decode_review(eviction_review("theirs")))
    assert (answer.allowed, answer.outcome) == (True, "not-a-pod")
