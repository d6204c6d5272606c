"""The kubelet's PodResources answers (from a real gRPC server speaking the kubelet's proto)
against our assignments -> corrections the extender's inventory will follow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.agent.cgroup import PidMapper
from extender.agent.config import AgentConfig
from extender.agent.corrections import correction
from extender.agent.devices import DeviceMap
from extender.agent.errors import PodResourcesError
from extender.agent.kubelet import PodResourcesClient
from extender.agent.loop import Agent
from extender.agent.metrics import AgentMetrics
from extender.agent.nodeapi import FileAgentApi
from extender.agent.nvml_fixture import FixtureBackend
from extender.agent.pods import node_pod
from extender.kube.annotations import decode_assignment, encode_assignment
from extender.model import (
    ANNOTATION_OBSERVED,
    Assignment,
    GpuGrant,
    RequestKind,
)
from extender.platform import Platform
from tests.agent.kubelet_server import fake_kubelet
from tests.agent.scene import Scene

WHOLE, MIG, SHARED, VRAM = (RequestKind.WHOLE, RequestKind.MIG, RequestKind.SHARED,
                            RequestKind.VRAM)


def a100_scene(tmp_path: Path) -> Scene:
    scene = Scene(tmp_path)
    for i in range(2):
        scene.gpu(i, "NVIDIA A100-SXM4-80GB", 81920)
    scene.gpu(2, "NVIDIA A100-SXM4-80GB", 81920, migEnabled=True, migInstances=[
        {"profile": "1g.10gb", "start": 0, "uuid": "MIG-A"},
        {"profile": "1g.10gb", "start": 5, "uuid": "MIG-B"}])
    return scene


def whole(index: int) -> GpuGrant:
    return GpuGrant(index, 81920, whole=True, uuid=f"GPU-{index:04d}")


def ask(scene: Scene, assignment: Assignment, given: dict[str, list[str]]) -> Any:
    """One pod, one kubelet answer, through the real gRPC client."""
    fixture, _, _ = scene.write()
    pod = node_pod(scene.pod(1, "p", assignment))
    devices = DeviceMap(FixtureBackend(fixture).snapshot())
    with fake_kubelet(scene.root) as (kubelet, socket):
        kubelet.give({("ml", "p"): {"main": given}})
        client = PodResourcesClient(socket)
        try:
            answers = client.list()
        finally:
            client.close()
    return correction(pod, answers[("ml", "p")], devices)


def test_a_different_whole_gpu_is_corrected(tmp_path: Path) -> None:
    chosen = Assignment("gpu-node", WHOLE, (whole(0),), type_id="a100-80gb", generation=3)
    fix, problems = ask(a100_scene(tmp_path), chosen, {"nvidia.com/gpu": ["GPU-0001"]})
    assert problems == []
    assert fix.assignment == Assignment("gpu-node", WHOLE, (whole(1),), type_id="a100-80gb",
                                        generation=3)
    assert "chose GPU 0 (GPU-0000); the kubelet gave GPU 1 (GPU-0001)" in fix.summary


def test_the_same_devices_need_no_correction(tmp_path: Path) -> None:
    chosen = Assignment("gpu-node", WHOLE, (whole(0), whole(1)))
    fix, problems = ask(a100_scene(tmp_path), chosen,
                        {"nvidia.com/gpu": ["GPU-0001", "GPU-0000"]})
    assert (fix, problems) == (None, [])


def test_a_different_mig_instance_is_corrected_to_its_placement(tmp_path: Path) -> None:
    grant = GpuGrant(2, 9856, mig_profile="1g.10gb", mig_start=0, mig_slices=1,
                     uuid="GPU-0002")
    fix, _ = ask(a100_scene(tmp_path), Assignment("gpu-node", MIG, (grant,)),
                 {"nvidia.com/mig-1g.10gb": ["MIG-B"]})
    [corrected] = fix.assignment.grants
    assert (corrected.index, corrected.mig_start, corrected.mig_slices) == (2, 5, 1)


def test_time_slice_replica_ids_name_their_gpu(tmp_path: Path) -> None:
    grant = GpuGrant(0, 20480, replica=True, uuid="GPU-0000")
    fix, _ = ask(a100_scene(tmp_path), Assignment("gpu-node", SHARED, (grant,)),
                 {"nvidia.com/gpu.shared": ["GPU-0001::3"]})
    [corrected] = fix.assignment.grants
    assert (corrected.index, corrected.uuid, corrected.vram_mib, corrected.replica) == \
        (1, "GPU-0001", 20480, True)


def test_vram_shares_are_not_the_kubelets_to_allocate(tmp_path: Path) -> None:
    fix, problems = ask(a100_scene(tmp_path), Assignment("gpu-node", VRAM, (GpuGrant(0, 4096),)),
                        {"nvidia.com/gpu": ["GPU-0001"]})
    assert (fix, problems) == (None, [])


def test_a_device_nvml_does_not_know_is_reported_not_guessed(tmp_path: Path) -> None:
    fix, problems = ask(a100_scene(tmp_path), Assignment("gpu-node", WHOLE, (whole(0),)),
                        {"nvidia.com/gpu": ["GPU-ffff"]})
    assert fix is None
    assert problems == ["kubelet device 'GPU-ffff' is no GPU NVML knows"]


def test_an_unreachable_kubelet_is_a_clear_error(tmp_path: Path) -> None:
    client = PodResourcesClient(str(tmp_path / "nothing.sock"), timeout_s=1)
    with pytest.raises(PodResourcesError, match=r"UNAVAILABLE.*--pod-resources-socket"):
        client.list()
    client.close()


def test_a_pass_corrects_counts_and_measures_against_the_truth(tmp_path: Path,
                                                              platform: Platform) -> None:
    # The extender chose GPU 0; the kubelet gave GPU 1, where the process really runs. The
    # pass records the truth (assigned-observed, counted) and the usage has a declaration.
    scene = a100_scene(tmp_path)
    scene.pod(1, "p", Assignment("gpu-node", WHOLE, (whole(0),)))
    scene.process(scene.gpus[1], 100, 1, 1000)
    fixture, pods, proc = scene.write()
    api = FileAgentApi(pods)
    metrics = AgentMetrics("gpu-node")
    with fake_kubelet(tmp_path) as (kubelet, socket):
        kubelet.give({("ml", "p"): {"main": {"nvidia.com/gpu": ["GPU-0001"]}}})
        client = PodResourcesClient(socket)
        agent = Agent(node="gpu-node", backend=FixtureBackend(fixture), api=api,
                      catalog=platform.catalog, config=AgentConfig(), metrics=metrics,
                      mapper=PidMapper(proc), kubelet=client, write=True)
        result = agent.run_pass()
        client.close()
    assert [u.declared_mib for u in result.usage] == [81920]
    assert result.overuse == []
    [(verb, target, annotations)] = [w for w in api.writes if w[0] == "annotate-pod"]
    assert (verb, target) == ("annotate-pod", "ml/p")
    assert decode_assignment(annotations[ANNOTATION_OBSERVED]).grants == (whole(1),)
    text = metrics.render().decode()
    assert 'gpu_extender_agent_assignment_corrections_total{node="gpu-node"} 1.0' in text


def test_the_extender_holds_the_observed_assignment(platform: Platform) -> None:
    # extender side: assigned-observed (valid) wins over assigned; a broken one is reported
    # and the extender's own choice still counts.
    chosen = Assignment("n", WHOLE, (whole(0),))
    truth = Assignment("n", WHOLE, (whole(1),))
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ml", "uid": "u", "annotations": {
        "gpu-extender.io/assigned": encode_assignment(chosen),
        ANNOTATION_OBSERVED: encode_assignment(truth)}}, "spec": {"nodeName": "n"}}
    assert platform.pods.decode(pod).assignment == truth
    pod["metadata"]["annotations"][ANNOTATION_OBSERVED] = "{broken"
    info = platform.pods.decode(pod)
    assert info.assignment == chosen
    assert any(ANNOTATION_OBSERVED in p for p in info.problems)
