"""manifests/agent.yaml, installed unchanged into the real kube-apiserver: the agent's
ServiceAccount, with a pod-bound token as the kubelet would project it (node-name claim), can
do its job on its own Node and nothing else: the ValidatingAdmissionPolicy refuses changes to
other Nodes, to pods on other Nodes and to its Node's labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kubernetes import utils

from extender.agent.cgroup import PidMapper
from extender.agent.config import AgentConfig
from extender.agent.loop import Agent
from extender.agent.metrics import AgentMetrics
from extender.agent.nvml_fixture import FixtureBackend
from extender.apiserver.errors import KubeError
from extender.apiserver.node_agent import ApiServerAgentApi
from extender.model import ANNOTATION_NODE_GPUS, ANNOTATION_OBSERVED, PodKey
from extender.platform import load_platform
from localcluster.binaries import REPO_ROOT
from tests.e2e.gpu_helpers import gpu_cluster

pytestmark = pytest.mark.e2e
MANIFEST = REPO_ROOT / "manifests" / "agent.yaml"
SA, NS = "gpu-extender-agent", "kube-system"


def pod_on(name: str, node: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": node, "serviceAccountName": SA if namespace == NS else "default",
                     "containers": [{"name": "main", "image": "x"}]}}


def agent_kubeconfig(admin: Path, token: str, path: Path) -> Path:
    config = yaml.safe_load(admin.read_text())
    config["users"] = [{"name": "agent", "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = "agent"
    path.write_text(yaml.safe_dump(config))
    return path


def agent_api(cluster: Any, directory: Path, bound_pod: Any = None) -> ApiServerAgentApi:
    """The agent's client with a token of its ServiceAccount: bound to ``bound_pod`` (as the
    kubelet projects it, with the node-name claim), or unbound (no claim)."""
    spec: dict[str, Any] = {"expirationSeconds": 3600}
    if bound_pod is not None:
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod",
                                  "name": bound_pod.metadata.name, "uid": bound_pod.metadata.uid}
    token = cluster.api().create_namespaced_service_account_token(
        SA, NS, {"spec": spec}).status.token
    return ApiServerAgentApi(str(agent_kubeconfig(cluster.kubeconfig(), token,
                                                  directory / "agent.kubeconfig")))


def wait_policy_enforced(cluster: Any, api: ApiServerAgentApi, node: str) -> None:
    """A new ValidatingAdmissionPolicy takes effect once the apiserver's informer has it
    (about a second): probe with a change the policy must refuse."""
    def refused() -> bool:
        try:
            api.patch_node_annotations(node, {"gpu-extender.io/probe": "x"})
        except KubeError as exc:
            return "HTTP 422" in str(exc)
        return False

    cluster.wait_for(refused, timeout_s=30, description="the admission policy to be enforced")


def test_the_agent_may_change_only_its_own_node(controlplane_binaries: object,
                                                tmp_path: Path) -> None:
    with gpu_cluster() as cluster:
        admin = cluster.api()
        utils.create_from_yaml(cluster.api_client(), yaml_file=str(MANIFEST))
        cluster.create_node("gpu-node", {"nvidia.com/gpu": 1})
        cluster.create_node("other-node", {"nvidia.com/gpu": 1})
        agent_pod = admin.create_namespaced_pod(NS, pod_on("agent", "gpu-node", NS))
        mine = admin.create_namespaced_pod("default", pod_on("mine", "gpu-node"))
        theirs = admin.create_namespaced_pod("default", pod_on("theirs", "other-node"))
        api = agent_api(cluster, tmp_path, agent_pod)
        wait_policy_enforced(cluster, api, "other-node")

        # Its job: a whole pass publishes the node's GPUs.
        fixture = tmp_path / "fixture.json"
        fixture.write_bytes(orjson.dumps({"gpus": [{"index": 0, "uuid": "GPU-0",
                                                    "name": "NVIDIA L4",
                                                    "memoryTotalMiB": 23034}]}))
        agent = Agent(node="gpu-node", backend=FixtureBackend(fixture), api=api,
                      catalog=load_platform().catalog, config=AgentConfig(),
                      metrics=AgentMetrics("gpu-node"), mapper=PidMapper(tmp_path),
                      kubelet=None, write=True)
        assert agent.run_pass().problems == []
        assert ANNOTATION_NODE_GPUS in admin.read_node("gpu-node").metadata.annotations
        api.patch_pod_annotations(PodKey("default", "mine", mine.metadata.uid),
                                  {ANNOTATION_OBSERVED: "{}"})
        api.warn(PodKey("default", "mine", mine.metadata.uid), "GPUMemoryOveruse", "test")

        # Nothing else.
        refused = [
            lambda: api.patch_node_annotations("other-node", {ANNOTATION_NODE_GPUS: "{}"}),
            lambda: api.patch_pod_annotations(PodKey("default", "theirs", theirs.metadata.uid),
                                              {"a": "b"}),
        ]
        for action in refused:
            with pytest.raises(KubeError, match="HTTP 422") as error:
                action()
            assert "may change only that Node" in str(error.value.__cause__.body)
        with pytest.raises(KubeError, match="HTTP 422") as error:
            api._call("label node", api._core.patch_node, "gpu-node",
                      {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-H100"}}},
                      _content_type="application/merge-patch+json")
        assert "only its own (gpu-extender.io/) annotations" in str(error.value.__cause__.body)
        # of its Node's annotations only its own, of a pod only assigned-observed
        mine_key = PodKey("default", "mine", mine.metadata.uid)
        for action, message in [
            (lambda: api.patch_node_annotations("gpu-node", {"example.com/x": "y"}),
             "only its own (gpu-extender.io/) annotations"),
            (lambda: api.patch_pod_annotations(mine_key, {"a": "b"}),
             "only the gpu-extender.io/assigned-observed"),
            (lambda: api.patch_pod_annotations(mine_key, {"gpu-extender.io/assigned": "{}"}),
             "only the gpu-extender.io/assigned-observed"),
            (lambda: api._call("label pod", api._core.patch_namespaced_pod, "mine", "default",
                               {"metadata": {"labels": {"team": "x"}}}),
             "only the gpu-extender.io/assigned-observed"),
            (lambda: api._call("retolerate pod", api._core.patch_namespaced_pod, "mine",
                               "default", {"spec": {"tolerations": [
                                   {"key": "k", "operator": "Exists"}]}}),
             "only the gpu-extender.io/assigned-observed"),
        ]:
            with pytest.raises(KubeError, match="HTTP 422") as error:
                action()
            assert message in str(error.value.__cause__.body)
        with pytest.raises(KubeError, match="HTTP 403"):  # plain RBAC
            api._call("list secrets", api._core.list_namespaced_secret, NS)

        # The DaemonSet the manifest ships was accepted as written.
        from kubernetes.client import AppsV1Api

        daemonset = AppsV1Api(cluster.api_client()).read_namespaced_daemon_set(SA, NS)
        assert daemonset.spec.template.spec.host_pid is True


def test_a_token_without_the_node_claim_changes_nothing(controlplane_binaries: object,
                                                        tmp_path: Path) -> None:
    with gpu_cluster() as cluster:
        admin = cluster.api()
        utils.create_from_yaml(cluster.api_client(), yaml_file=str(MANIFEST))
        cluster.create_node("gpu-node", {"nvidia.com/gpu": 1})
        api = agent_api(cluster, tmp_path)
        wait_policy_enforced(cluster, api, "gpu-node")
        with pytest.raises(KubeError, match="HTTP 422"):
            api.patch_node_annotations("gpu-node", {ANNOTATION_NODE_GPUS: "{}"})
        assert ANNOTATION_NODE_GPUS not in (admin.read_node("gpu-node").metadata.annotations
                                            or {})
