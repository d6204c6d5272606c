"""The agent's loop survives anything (issue 19, finding 7): hostile annotations and cgroup
files become problems of the pass, the pass goes on; a failing pass is counted and the next one
runs; health follows the passes; an assignment for another node is ignored; a CPU pod using a
GPU is overuse of zero; duplicate UUIDs are not published; the gpus annotation stays within
what the API server accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from extender.agent.cgroup import PidMapper
from extender.agent.config import AgentConfig
from extender.agent.loop import Agent, AgentLoop, PassResult
from extender.agent.metrics import AgentMetrics
from extender.agent.nodeapi import FileAgentApi
from extender.agent.nvml_fixture import FixtureBackend
from extender.agent.publisher import MAX_ANNOTATIONS_BYTES
from extender.kube.annotations import encode_assignment
from extender.model import ANNOTATION_NODE_GPUS, ANNOTATION_OBSERVED, Assignment, GpuGrant
from extender.model import RequestKind as Kind
from extender.platform import load_platform
from tests.agent.scene import Scene


class RecordingApi(FileAgentApi):
    """The pods file, with the Node given here (its annotations decide the budget)."""

    def __init__(self, path: Path, node: dict[str, Any]) -> None:
        super().__init__(path)
        self._node = node

    def node(self, name: str) -> dict[str, Any]:
        return self._node


def agent_for(scene: Scene, *, node: dict[str, Any] | None = None,
              write: bool = True) -> tuple[Agent, FileAgentApi, AgentMetrics]:
    fixture, pods, proc = scene.write()
    api = RecordingApi(pods, node or {"metadata": {"name": scene.node}})
    metrics = AgentMetrics(scene.node)
    agent = Agent(node=scene.node, backend=FixtureBackend(fixture), api=api,
                  catalog=load_platform().catalog, config=AgentConfig(), metrics=metrics,
                  mapper=PidMapper(proc), kubelet=None, write=write)
    return agent, api, metrics


def share(mib: int, node: str = "gpu-node", uuid: object = "GPU-0000") -> Assignment:
    return Assignment(node, Kind.VRAM, (GpuGrant(0, mib, uuid=uuid),))  # type: ignore[arg-type]


def errors(metrics: AgentMetrics, stage: str) -> float:
    value = metrics.registry.get_sample_value("gpu_extender_agent_pass_errors_total",
                                              {"stage": stage})
    return value or 0.0


def test_a_list_uuid_and_a_non_utf8_cgroup_are_problems_and_the_pass_goes_on(
        tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    gpu = scene.gpu(0)
    hostile = scene.pod(1, "hostile", share(1024))
    hostile["metadata"]["annotations"][ANNOTATION_OBSERVED] = orjson.dumps(
        {"node": "gpu-node", "kind": "vram", "grants": [{"index": 0, "vramMiB": 1,
                                                         "uuid": ["x"]}]}).decode()
    scene.pod(2, "fine", share(1024))
    scene.process(gpu, 100, 1, 500)
    scene.process(gpu, 200, 2, 4000)  # pod 2 overuses: 4000 MiB against 1024
    scene.write()
    (tmp_path / "proc" / "300").mkdir()
    (tmp_path / "proc" / "300" / "cgroup").write_bytes(b"0::/kubepods/pod\xff\xfe/abc\n")
    gpu["processes"].append({"pid": 300, "usedMemoryMiB": 10})
    agent, _api, _metrics = agent_for(scene)

    result = agent.run_pass()

    assert any("hostile" in p and ANNOTATION_OBSERVED in p for p in result.problems), \
        result.problems
    assert [(o.pod, o.used_mib, o.declared_mib) for o in result.overuse] == [
        ("fine", 4000, 1024)]
    # the hostile pod's own usage still counts against its `assigned` (1024 MiB)
    assert [(u.pod, u.used_mib, u.declared_mib) for u in result.usage] == [
        ("fine", 4000, 1024), ("hostile", 500, 1024)]


def test_an_assignment_for_another_node_is_ignored(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    gpu = scene.gpu(0)
    pod = scene.pod(1, "sly", share(1024))
    # the owner adds an "observed" assignment naming another node, claiming all of the GPU
    pod["metadata"]["annotations"][ANNOTATION_OBSERVED] = encode_assignment(
        share(23034, node="elsewhere"))
    scene.process(gpu, 100, 1, 8000)
    agent, _api, _metrics = agent_for(scene)

    result = agent.run_pass()

    assert [(o.pod, o.used_mib, o.declared_mib) for o in result.overuse] == [("sly", 8000, 1024)]
    assert any("names node 'elsewhere'" in p for p in result.problems), result.problems


def test_a_pod_that_asks_for_no_gpu_overuses_from_zero(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    gpu = scene.gpu(0)
    scene.pod(1, "cpu-only", None, gpu=False)  # sets NVIDIA_VISIBLE_DEVICES=all itself
    scene.pod(2, "unplaced-gpu-pod", None)  # asks for a GPU, not placed by us: no declaration
    scene.process(gpu, 100, 1, 300)
    scene.process(gpu, 200, 2, 300)
    agent, api, _metrics = agent_for(scene)

    result = agent.run_pass()

    assert [(o.pod, o.used_mib, o.declared_mib) for o in result.overuse] == [
        ("cpu-only", 300, 0)]
    events = [w for w in api.writes if w[0] == "event"]
    assert len(events) == 1 and "cpu-only" in events[0][1], events
    assert "uses 300 MiB" in str(events[0][2]) and "declared 0 MiB" in str(events[0][2])


def test_duplicate_uuids_are_published_unhealthy_without_their_uuid(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    scene.gpu(0)
    twin = scene.gpu(1)
    twin["uuid"] = "GPU-0000"  # NVML (or a fixture) reports one UUID twice
    scene.gpu(2)
    agent, _api, _metrics = agent_for(scene)

    result = agent.run_pass()

    entries = orjson.loads(result.inventory.document())
    gpus = entries["gpus"] if isinstance(entries, dict) else entries
    by_index = {g["index"]: g for g in gpus}
    assert "uuid" not in by_index[0] and "uuid" not in by_index[1]
    assert by_index[0]["healthy"] is False and by_index[1]["healthy"] is False
    assert by_index[2]["uuid"] == "GPU-0002" and by_index[2].get("healthy", True) is True
    assert sum("GPU-0000 reported for more than one device" in p for p in result.problems) == 2


def test_an_annotation_over_the_api_servers_limit_is_not_sent(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    scene.gpu(0)
    # the node's other annotations leave less room than the document needs
    crowded = {"metadata": {"name": scene.node, "annotations": {
        "other": "x" * (MAX_ANNOTATIONS_BYTES - 100)}}}
    agent, api, metrics = agent_for(scene, node=crowded)

    result = agent.run_pass()

    assert not [w for w in api.writes if w[0] == "annotate-node"]
    assert any("not published" in p and str(MAX_ANNOTATIONS_BYTES) in p
               for p in result.problems), result.problems
    assert errors(metrics, "publish") == 1

    roomy = {"metadata": {"name": scene.node, "annotations": {"other": "x"}}}
    agent, api, metrics = agent_for(scene, node=roomy)
    agent.run_pass()
    assert next(w[2] for w in api.writes if w[0] == "annotate-node").keys() == {
        ANNOTATION_NODE_GPUS}


class Failing:
    """An agent whose passes raise what the loop has never seen (not an ExtenderError)."""

    def __init__(self) -> None:
        self.calls = 0

    def run_pass(self) -> PassResult:
        self.calls += 1
        raise TypeError("unhashable type: 'list'")


def test_a_pass_that_raises_anything_is_counted_and_the_loop_goes_on(tmp_path: Path) -> None:
    metrics = AgentMetrics("gpu-node")
    now = [1000.0]
    loop = AgentLoop(Failing(), 10.0, metrics, clock=lambda: now[0])  # type: ignore[arg-type]
    loop.run_once()
    loop.run_once()
    assert metrics.registry.get_sample_value("gpu_extender_agent_passes_total",
                                             {"outcome": "failed"}) == 2
    assert errors(metrics, "pass") == 2
    assert loop.health() is None  # passes still end: alive
    assert loop.ready() == ("no pass has completed yet; the last failed: TypeError: "
                            "unhashable type: 'list'")


def test_health_fails_when_passes_stop(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    scene.gpu(0)
    agent, _api, _metrics = agent_for(scene, write=False)
    now = [1000.0]
    loop = AgentLoop(agent, 10.0, clock=lambda: now[0])
    assert loop.ready() == "no pass has completed yet"
    loop.run_once()
    assert (loop.health(), loop.ready()) == (None, None)
    now[0] += loop.stale_after_s + 1  # 3 intervals + 60 s without a pass ending: hung
    assert loop.health() == "no pass ended in the last 91 s (one every 10 s expected)"
    assert loop.ready() == loop.health()
