"""The node agent evicts only pods bound to its own node, on the real kube-apiserver.

First the evidence for the design (``extender/webhook/evictions.py``): a ValidatingAdmissionPolicy
on ``pods/eviction`` sees the Eviction (no node anywhere) and the request's pod name, never the
pod. Then the shipped answer: manifests/agent.yaml and manifests/webhook.yaml installed, the real
webhook over TLS with ``--agent-user``, the agent's pod-bound token (the node-name claim the
kubelet's token carries): its Eviction of a pod on another node is refused, of a pod on its own
node goes through, and a token with no node claim evicts nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import utils
from kubernetes.client import AdmissionregistrationV1Api

from extender.apiserver.errors import KubeError
from extender.model import PodKey
from localcluster import LocalCluster
from localcluster.network import free_port
from tests.e2e.test_agent_rbac import MANIFEST as AGENT_MANIFEST
from tests.e2e.test_agent_rbac import NS, agent_api, pod_on
from tests.e2e.webhook_helpers import WEBHOOK_DATA, Webhook, make_certs, register, wait_enforced

pytestmark = pytest.mark.e2e
AGENT = "system:serviceaccount:kube-system:gpu-extender-agent"


def probe_policy() -> tuple[dict[str, Any], dict[str, Any]]:
    """A policy that refuses the agent's Evictions in namespace ``probe`` and says, in its
    message, everything it can see: the keys of ``object``, ``oldObject``, ``request.name``."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "eviction-probe"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["pods/eviction"]}]},
            "matchConditions": [{"name": "agent",
                                 "expression": f"request.userInfo.username == '{AGENT}'"}],
            "validations": [{
                "expression": "false",
                "messageExpression":
                    "'sees object=' + object.kind + ' keys ' + "
                    "object.map(k, k).sort().join(',') + "
                    "' oldObject=' + (oldObject == null ? 'null' : 'set') + "
                    "' request.name=' + request.name + "
                    "' subResource=' + request.subResource"}]}}
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "eviction-probe"},
        "spec": {"policyName": "eviction-probe", "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": "probe"}}}}}
    return policy, binding


def eviction_refusal(action: Any) -> str | None:
    try:
        action()
    except KubeError as exc:
        return str(exc.__cause__.body) if exc.__cause__ is not None else str(exc)
    return None


def test_the_agent_evicts_only_pods_on_its_own_node(controlplane_binaries: object,
                                                    tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    with LocalCluster(None, None) as cluster:
        admin = cluster.api()
        utils.create_from_yaml(cluster.api_client(), yaml_file=str(AGENT_MANIFEST))
        cluster.create_node("gpu-node", {"nvidia.com/gpu": 1})
        cluster.create_node("other-node", {"nvidia.com/gpu": 1})
        admin.create_namespace({"metadata": {"name": "probe"}})
        agent_pod = admin.create_namespaced_pod(NS, pod_on("agent", "gpu-node", NS))
        mine = admin.create_namespaced_pod("default", pod_on("mine", "gpu-node"))
        theirs = admin.create_namespaced_pod("default", pod_on("theirs", "other-node"))
        probed = admin.create_namespaced_pod("probe", pod_on("probed", "other-node", "probe"))
        api = agent_api(cluster, tmp_path, agent_pod)

        # -- the evidence: what a policy on pods/eviction sees ----------------------------
        policy, binding = probe_policy()
        admission = AdmissionregistrationV1Api(cluster.api_client())
        admission.create_validating_admission_policy(policy)
        admission.create_validating_admission_policy_binding(binding)
        probe_key = PodKey("probe", "probed", probed.metadata.uid)
        cluster.wait_for(lambda: eviction_refusal(lambda: api.evict(probe_key)) is not None,
                         timeout_s=30, description="the probe policy to be enforced")
        seen = eviction_refusal(lambda: api.evict(probe_key))
        assert seen is not None
        # the Eviction alone: no spec, no nodeName; the pod is only a name
        assert "sees object=Eviction keys apiVersion,deleteOptions,kind,metadata " \
               "oldObject=null request.name=probed subResource=eviction" in seen

        # -- the shipped check: the webhook reads the pod ---------------------------------
        webhook = Webhook(cluster, certs, free_port())
        webhook.start(WEBHOOK_DATA / "extender.yaml", "--agent-user", AGENT,
                      "--kubeconfig", str(cluster.kubeconfig()))
        try:
            register(cluster, webhook)
            gpu_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
                       "spec": {"containers": [{"name": "main", "image": "x", "resources": {
                           "limits": {"nvidia.com/gpu": "1"}}}]}}
            invalid = {**gpu_pod, "metadata": {"name": "invalid", "labels": {
                "gpu-extender.io/accelerator": "a1000"}}}
            wait_enforced(cluster, invalid, gpu_pod)

            refused = eviction_refusal(
                lambda: api.evict(PodKey("default", "theirs", theirs.metadata.uid)))
            assert refused is not None
            assert "the gpu-extender agent of node 'gpu-node' may evict only pods bound to " \
                   "that node; pod default/theirs is on node 'other-node'" in refused
            assert admin.read_namespaced_pod("theirs", "default").metadata.deletion_timestamp \
                is None

            assert api.evict(PodKey("default", "mine", mine.metadata.uid)) == "evicted"
            evicted = admin.read_namespaced_pod("mine", "default")  # no kubelet: terminating
            assert evicted.metadata.deletion_timestamp is not None

            # a token of the agent's account not bound to a pod carries no node: nothing
            (tmp_path / "unbound").mkdir()
            unbound = agent_api(cluster, tmp_path / "unbound", None)
            other = admin.create_namespaced_pod("default", pod_on("other", "gpu-node"))
            refused = eviction_refusal(
                lambda: unbound.evict(PodKey("default", "other", other.metadata.uid)))
            assert refused is not None and "its token names none" in refused
        finally:
            webhook.stop()
