"""The node agent against the real control plane: a fake NVML (fixture file) and a fake
kubelet (a real gRPC server speaking the PodResources proto) are the only stand-ins.

- the agent publishes the node's GPUs and the extender places pods on them by UUID;
- the kubelet gives a pod another GPU than chosen: the agent records the truth, and the
  extender's next placement avoids the GPU that is really busy;
- a process over its declared VRAM produces one Warning Event per episode and the metric;
  under the evict policy the overusing pod (never its neighbour) is evicted;
- an XID on one GPU takes it out of placement.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from extender.agent.cgroup import PidMapper
from extender.agent.config import AgentConfig, OverusePolicy
from extender.agent.kubelet import PodResourcesClient
from extender.agent.loop import Agent
from extender.agent.metrics import AgentMetrics
from extender.agent.nvml_fixture import FixtureBackend
from extender.apiserver.node_agent import ApiServerAgentApi
from extender.model import ANNOTATION_NODE_GPUS, ANNOTATION_OBSERVED, ANNOTATION_VISIBLE_DEVICES
from localcluster import LocalCluster
from localcluster.binaries import REPO_ROOT
from tests.agent.kubelet_server import FakeKubelet, fake_kubelet
from tests.agent.scene import cid
from tests.e2e.gpu_helpers import (
    NAMESPACE,
    assignment,
    create_pods,
    gpu_cluster,
    gpu_pod,
    wait_bound,
    wait_rejected,
)

pytestmark = pytest.mark.e2e
NODE = "gpu-node"


def uuid(index: int) -> str:
    return f"GPU-{index:08x}-aaaa-bbbb-cccc-000000000000"


@dataclass
class Node:
    """One fake GPU node: the fixture the agent reads, the /proc it maps PIDs in, the kubelet
    it asks, and the agent itself."""

    cluster: LocalCluster
    root: Path
    kubelet: FakeKubelet
    socket: str
    gpus: list[dict[str, Any]]
    next_pid: int = 1000

    @property
    def fixture(self) -> Path:
        return self.root / "fixture.json"

    def write_fixture(self) -> None:
        self.fixture.write_bytes(orjson.dumps({"driverVersion": "570", "gpus": self.gpus}))

    def run_process(self, gpu: int, pod: str, used_mib: int) -> None:
        """A process of ``pod``'s only container using ``used_mib`` on GPU ``gpu``."""
        uid = self.cluster.api().read_namespaced_pod(pod, NAMESPACE).metadata.uid
        self.next_pid += 1
        proc = self.root / "proc" / str(self.next_pid)
        proc.mkdir(parents=True)
        (proc / "cgroup").write_text(
            f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
            f"{uid.replace('-', '_')}.slice/cri-containerd-{cid(self.next_pid)}.scope\n")
        self.gpus[gpu]["processes"].append({"pid": self.next_pid, "usedMemoryMiB": used_mib})
        self.write_fixture()

    def agent(self, policy: OverusePolicy = OverusePolicy.WARN) -> tuple[Agent, AgentMetrics]:
        metrics = AgentMetrics(NODE)
        agent = Agent(node=NODE, backend=FixtureBackend(self.fixture),
                      api=ApiServerAgentApi(str(self.cluster.kubeconfig())),
                      catalog=_catalog(), config=AgentConfig(overuse_policy=policy),
                      metrics=metrics, mapper=PidMapper(self.root / "proc"),
                      kubelet=PodResourcesClient(self.socket), write=True)
        return agent, metrics

    def run_command(self) -> None:
        """One pass of the real command line (writes: no --print)."""
        subprocess.run([sys.executable, "-m", "extender", "agent", "--node-name", NODE,
                        "--kubeconfig", str(self.cluster.kubeconfig()),
                        "--nvml-fixture", str(self.fixture), "--proc-root",
                        str(self.root / "proc"), "--pod-resources-socket", self.socket,
                        "--once"], check=True, cwd=REPO_ROOT, timeout=120)

    def inventory(self) -> dict[str, Any]:
        with urllib.request.urlopen(
                f"{self.cluster.extender_url}/debug/inventory?node={NODE}", timeout=10) as r:
            doc: dict[str, Any] = orjson.loads(r.read())
        return doc["nodes"][0] if doc["nodes"] else {}


def _catalog() -> Any:
    from extender.platform import load_platform

    return load_platform().catalog


@contextmanager
def gpu_node(tmp_path: Path, count: int, name: str = "NVIDIA L4",
             memory: int = 23034) -> Iterator[Node]:
    with gpu_cluster() as cluster, fake_kubelet(tmp_path) as (kubelet, socket):
        cluster.create_node(NODE, {"nvidia.com/gpu": count})
        (tmp_path / "proc").mkdir()
        node = Node(cluster, tmp_path, kubelet, socket, [
            {"index": i, "uuid": uuid(i), "name": name, "memoryTotalMiB": memory,
             "processes": [], "xidErrors": []} for i in range(count)])
        node.write_fixture()
        yield node


def _settled_version(api: Any, quiet_s: float = 3.0, deadline_s: float = 60.0) -> str:
    """The Node's resourceVersion once nothing has written it for ``quiet_s``."""
    end = time.monotonic() + deadline_s
    version = api.read_node(NODE).metadata.resource_version
    while time.monotonic() < end:
        time.sleep(quiet_s)
        now = api.read_node(NODE).metadata.resource_version
        if now == version:
            return str(version)
        version = now
    raise AssertionError(f"node {NODE} kept changing for {deadline_s} s")


def test_agent_publishes_and_the_extender_places_by_uuid_then_follows_the_kubelet(
        controlplane_binaries: object, tmp_path: Path) -> None:
    with gpu_node(tmp_path, 2) as node:
        api = node.cluster.api()
        node.run_command()
        published = api.read_node(NODE).metadata.annotations[ANNOTATION_NODE_GPUS]
        assert [g["uuid"] for g in orjson.loads(published)["gpus"]] == [uuid(0), uuid(1)]
        # An unchanged pass does not write (the Node's resourceVersion stays). The extender's
        # capacity publisher patches the node's status once it has read the agent's annotation:
        # wait for that to settle first.
        version = _settled_version(api)
        node.run_command()
        assert api.read_node(NODE).metadata.resource_version == version

        create_pods(node.cluster, [gpu_pod("first", {"nvidia.com/gpu": 1})])
        assert wait_bound(node.cluster, "first") == NODE
        [grant] = assignment(api, "first").grants
        assert grant.uuid == uuid(grant.index)  # placed by UUID ...
        visible = api.read_namespaced_pod("first", NAMESPACE).metadata.annotations[
            ANNOTATION_VISIBLE_DEVICES]
        assert visible == uuid(grant.index)  # ... and NVIDIA_VISIBLE_DEVICES gets the UUID

        # The device manager gave the container the other GPU.
        other = 1 - grant.index
        node.kubelet.give({(NAMESPACE, "first"): {"main": {"nvidia.com/gpu": [uuid(other)]}}})
        agent, metrics = node.agent()
        result = agent.run_pass()
        assert len(result.corrections) == 1
        observed = orjson.loads(api.read_namespaced_pod("first", NAMESPACE).metadata.annotations[
            ANNOTATION_OBSERVED])
        assert [(g["index"], g["uuid"]) for g in observed["gpus"]] == [(other, uuid(other))]
        assert 'assignment_corrections_total{node="gpu-node"} 1.0' in metrics.render().decode()
        node.cluster.wait_for(
            lambda: [g["index"] for h in node.inventory().get("holdings", []) for g in h["gpus"]]
            == [other], description="the extender's inventory to follow the kubelet")

        # The next pod gets the GPU that is really free: the one the extender first chose.
        create_pods(node.cluster, [gpu_pod("second", {"nvidia.com/gpu": 1})])
        wait_bound(node.cluster, "second")
        assert [g.index for g in assignment(api, "second").grants] == [grant.index]
        assert agent.run_pass().corrections == []  # the truth is recorded once


def overuse_events(node: Node, pod: str) -> list[Any]:
    return [e for e in node.cluster.events_for_pod(NAMESPACE, pod)
            if e.reason == "GPUMemoryOveruse"]


def test_overuse_produces_one_event_per_episode_and_the_metric(
        controlplane_binaries: object, tmp_path: Path) -> None:
    with gpu_node(tmp_path, 1) as node:
        node.run_command()
        create_pods(node.cluster, [gpu_pod("greedy", {"gpu-extender.io/gpu-memory": "4Gi"}),
                                   gpu_pod("modest", {"gpu-extender.io/gpu-memory": "4Gi"})])
        wait_bound(node.cluster, "greedy")
        wait_bound(node.cluster, "modest")
        node.run_process(0, "greedy", 6000)  # 6000 MiB used, 4096 declared
        node.run_process(0, "modest", 3000)
        agent, metrics = node.agent()
        first = agent.run_pass()
        assert [(o.pod, o.used_mib, o.declared_mib) for o in first.overuse] == [
            ("greedy", 6000, 4096)]
        agent.run_pass()  # the same episode: no second Event
        events = node.cluster.wait_for(lambda: overuse_events(node, "greedy"),
                                       description="the overuse Event")
        assert len(events) == 1 and events[0].type == "Warning"
        assert "6000 MiB" in events[0].message and "4096 MiB" in events[0].message
        assert uuid(0) in events[0].message
        assert overuse_events(node, "modest") == []
        samples = {(s.name, s.labels.get("pod")): (s.value, s.labels)
                   for family in text_string_to_metric_families(metrics.render().decode())
                   for s in family.samples}
        value, labels = samples[("gpu_extender_agent_overuse_episodes_total", "greedy")]
        assert value == 1.0
        assert (labels["UUID"], labels["modelName"]) == (uuid(0), "NVIDIA L4")
        assert ("gpu_extender_agent_overuse_episodes_total", "modest") not in samples
        assert samples[("gpu_extender_agent_gpu_memory_used_bytes", "greedy")][0] == 6000 * 2**20
        assert samples[("gpu_extender_agent_gpu_memory_declared_bytes", "greedy")][0] == \
            4096 * 2**20

        # The evict policy evicts the overusing pod through the Eviction API, not its
        # neighbour on the same GPU.
        evicting, _ = node.agent(OverusePolicy.EVICT)
        evicting.run_pass()
        api = node.cluster.api()

        def gone_or_terminating(name: str) -> bool:
            pods = {p.metadata.name: p for p in api.list_namespaced_pod(NAMESPACE).items}
            return name not in pods or pods[name].metadata.deletion_timestamp is not None

        node.cluster.wait_for(lambda: gone_or_terminating("greedy"),
                              description="the overusing pod to be evicted")
        assert not gone_or_terminating("modest")


def test_an_xid_takes_the_gpu_out_of_placement(controlplane_binaries: object,
                                               tmp_path: Path) -> None:
    with gpu_node(tmp_path, 2) as node:
        node.run_command()
        node.gpus[0]["xidErrors"] = [79]  # fallen off the bus
        node.write_fixture()
        node.run_command()
        node.cluster.wait_for(
            lambda: [g["healthy"] for g in node.inventory().get("gpus", [])] == [False, True],
            description="the extender to see GPU 0 unhealthy")
        create_pods(node.cluster, [gpu_pod("a", {"nvidia.com/gpu": 1})])
        wait_bound(node.cluster, "a")
        assert [g.index for g in assignment(node.cluster.api(), "a").grants] == [1]
        create_pods(node.cluster, [gpu_pod("b", {"nvidia.com/gpu": 1})])
        wait_rejected(node.cluster, "b")  # GPU 1 is taken and GPU 0 is unhealthy
        assert not node.cluster.api().read_namespaced_pod("b", NAMESPACE).spec.node_name
