"""The agent checks the handoff (agent/handoff.py), through the fixture seam: a share process
on another GPU than the booked one is a GpuHandoffMismatch (event, metric, assigned-observed
naming the GPU it really uses); none on any GPU is one after the grace period; each once."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from extender.agent.cgroup import PidMapper
from extender.agent.config import AgentConfig
from extender.agent.handoff import HandoffCheck
from extender.agent.loop import Agent
from extender.agent.metrics import AgentMetrics
from extender.agent.nodeapi import FileAgentApi
from extender.agent.nvml_fixture import FixtureBackend
from extender.kube.annotations import decode_assignment, encode_assignment
from extender.model import ANNOTATION_OBSERVED, Assignment, GpuGrant, RequestKind
from extender.platform import Platform
from tests.agent.scene import Scene
from tests.clock import FakeClock


def share(index: int, mib: int = 4096, kind: RequestKind = RequestKind.VRAM) -> Assignment:
    return Assignment("gpu-node", kind, (GpuGrant(index, mib, uuid=f"GPU-{index:04d}"),))


def agent_for(scene: Scene, platform: Platform, clock: FakeClock | None = None
              ) -> tuple[Agent, FileAgentApi, AgentMetrics]:
    fixture, pods, proc = scene.write()
    api = FileAgentApi(pods)
    metrics = AgentMetrics("gpu-node")
    agent = Agent(node="gpu-node", backend=FixtureBackend(fixture), api=api,
                  catalog=platform.catalog, config=AgentConfig(), metrics=metrics,
                  mapper=PidMapper(proc), kubelet=None, write=True)
    if clock is not None:  # the same check with a short grace on a hand-moved clock
        agent.handoff = HandoffCheck(api, CollectorRegistry(), write=True, grace_s=60,
                                     clock=clock)
    return agent, api, metrics


def test_a_share_process_on_the_wrong_gpu_is_reported_counted_and_corrected(
        tmp_path: Path, platform: Platform) -> None:
    scene = Scene(tmp_path)
    scene.gpu(0)
    gpu1 = scene.gpu(1)
    scene.pod(1, "p", share(0))          # booked on GPU 0 ...
    scene.process(gpu1, 100, 1, 3000)    # ... runs on GPU 1
    agent, api, metrics = agent_for(scene, platform)
    agent.run_pass()
    events = [w for w in api.writes if w[0] == "event" and "GpuHandoffMismatch" in w[2]]
    assert [(e[1], "GPU 1 (GPU-0001)" in e[2]) for e in events] == [("ml/p", True)]
    [(_, target, annotations)] = [w for w in api.writes if w[0] == "annotate-pod"]
    assert target == "ml/p"
    # the correction moves the share (4096 MiB) to the GPU it really uses
    assert decode_assignment(annotations[ANNOTATION_OBSERVED]).grants == (
        GpuGrant(1, 4096, uuid="GPU-0001"),)
    assert 'gpu_extender_agent_handoff_mismatches_total{finding="wrong-gpu"} 1.0' in \
        metrics.render().decode()
    # the next pass reports nothing new (once per pod and GPU)
    agent.run_pass()
    assert len([w for w in api.writes if w[0] == "event" and "GpuHandoffMismatch" in w[2]]) == 1


def test_the_booked_gpu_or_a_corrected_one_is_no_mismatch(tmp_path: Path,
                                                          platform: Platform) -> None:
    scene = Scene(tmp_path)
    gpu0, gpu1 = scene.gpu(0), scene.gpu(1)
    scene.pod(1, "right", share(0, kind=RequestKind.FRACTION))
    scene.process(gpu0, 100, 1, 1000)
    corrected = scene.pod(2, "corrected", share(0))
    corrected["metadata"]["annotations"][ANNOTATION_OBSERVED] = encode_assignment(share(1))
    scene.process(gpu1, 200, 2, 1000)
    agent, api, metrics = agent_for(scene, platform)
    agent.run_pass()
    assert not [w for w in api.writes if "GpuHandoffMismatch" in str(w[2])]
    assert "handoff_mismatches_total{" not in metrics.render().decode()


def test_no_process_on_any_gpu_is_reported_after_the_grace_period(
        tmp_path: Path, platform: Platform) -> None:
    scene = Scene(tmp_path)
    scene.gpu(0)
    scene.pod(1, "idle", share(0))
    clock = FakeClock()
    agent, api, _ = agent_for(scene, platform, clock)
    agent.run_pass()                     # t = 0: first seen without a process
    clock.now += 59
    agent.run_pass()                     # 59 s < 60 s grace: nothing yet
    assert not [w for w in api.writes if w[0] == "event"]
    clock.now += 2
    agent.run_pass()                     # 61 s: reported, no correction (no truth known)
    events = [w for w in api.writes if w[0] == "event"]
    assert len(events) == 1 and "no process of the pod has run on any GPU" in events[0][2]
    assert not [w for w in api.writes if w[0] == "annotate-pod"]
    assert agent.handoff.mismatches.labels("no-gpu")._value.get() == 1
