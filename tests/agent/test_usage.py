"""Usage vs declared per pod and device, overuse, and the episode logic (one Event per
episode)."""

from __future__ import annotations

from pathlib import Path

from extender.agent.cgroup import PidMapper
from extender.agent.devices import DeviceMap
from extender.agent.episodes import EpisodeTracker
from extender.agent.nvml_fixture import FixtureBackend
from extender.agent.pods import node_pods
from extender.agent.usage import Usage, measure, overuses
from extender.model import Assignment, GpuGrant, RequestKind
from tests.agent.scene import Scene

VRAM, WHOLE, MIG = RequestKind.VRAM, RequestKind.WHOLE, RequestKind.MIG


def usage_of(scene: Scene) -> list[Usage]:
    fixture, _, proc = scene.write()
    devices = DeviceMap(FixtureBackend(fixture).snapshot())
    return measure(devices, node_pods(scene.pods, scene.node), PidMapper(proc))


def share(index: int, mib: int) -> Assignment:
    return Assignment("gpu-node", VRAM, (GpuGrant(index, mib, uuid=f"GPU-{index:04d}"),))


def rows(entries: list[Usage]) -> list[tuple[str, str, str, int, int | None]]:
    return [(u.pod, u.container, u.uuid, u.used_mib, u.declared_mib) for u in entries]


def test_shares_whole_and_mig_are_measured_against_their_grants(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    l4 = scene.gpu(0)
    a100 = scene.gpu(1, "NVIDIA A100-SXM4-80GB", 81920)
    mig = scene.gpu(2, "NVIDIA A100-SXM4-80GB", 81920, migEnabled=True, migInstances=[
        {"profile": "1g.10gb", "start": 0, "uuid": "MIG-0", "processes": []},
        {"profile": "1g.10gb", "start": 1, "uuid": "MIG-1", "processes": []}])
    scene.pod(1, "small", share(0, 4096))
    scene.pod(2, "big", share(0, 4096))
    scene.pod(3, "train", Assignment("gpu-node", WHOLE, (GpuGrant(1, 81920, whole=True),)))
    scene.pod(4, "slice", Assignment("gpu-node", MIG, (GpuGrant(
        2, 9856, mig_profile="1g.10gb", mig_start=1, mig_slices=1),)))
    scene.pod(5, "foreign", None)  # placed by someone else: no declaration
    scene.process(l4, 100, 1, 3000)
    scene.process(l4, 101, 2, 6000)
    scene.process(a100, 102, 3, 80000)
    scene.process(mig["migInstances"][1], 103, 4, 9000)
    scene.process(a100, 104, 5, 500)
    scene.process(l4, 105, 4, 100)  # the MIG pod also touches the L4 it was never given
    l4["processes"].append({"pid": 999, "usedMemoryMiB": 700})  # a host process: not a pod
    entries = usage_of(scene)
    assert rows(entries) == [
        ("big", "main", "GPU-0000", 6000, 4096),
        ("foreign", "main", "GPU-0001", 500, None),
        ("slice", "main", "GPU-0000", 100, 0),
        ("slice", "main", "MIG-1", 9000, 9856),
        ("small", "main", "GPU-0000", 3000, 4096),
        ("train", "main", "GPU-0001", 80000, 81920),
    ]
    # big: 6000 > 4096; slice on the L4: 100 > 0 (a device it was not given); foreign never
    assert [(o.pod, o.uuid, o.used_mib, o.declared_mib) for o in overuses(entries)] == [
        ("big", "GPU-0000", 6000, 4096), ("slice", "GPU-0000", 100, 0)]
    # a tolerance of 100 MiB forgives the touch, not the 1904 MiB over
    assert [o.pod for o in overuses(entries, tolerance_mib=100)] == ["big"]


def test_containers_of_one_pod_add_up_against_the_pods_declaration(tmp_path: Path) -> None:
    # 2500 + 2000 = 4500 MiB > 4096 declared, though each container alone is under it
    scene = Scene(tmp_path)
    l4 = scene.gpu(0)
    scene.pod(1, "duo", share(0, 4096), containers=("a", "b"))
    scene.process(l4, 100, 1, 2500, container=0)
    scene.process(l4, 101, 1, 2000, container=1)
    entries = usage_of(scene)
    assert rows(entries) == [("duo", "a", "GPU-0000", 2500, 4096),
                             ("duo", "b", "GPU-0000", 2000, 4096)]
    [over] = overuses(entries)
    assert (over.container, over.used_mib, over.declared_mib) == ("a", 4500, 4096)


def test_one_event_per_episode(tmp_path: Path) -> None:
    scene = Scene(tmp_path)
    l4 = scene.gpu(0)
    scene.pod(1, "p", share(0, 4096))
    scene.process(l4, 100, 1, 5000)
    over = overuses(usage_of(scene))
    tracker = EpisodeTracker()
    assert [o.pod for o in tracker.update(over)] == ["p"]  # starts
    assert tracker.update(over) == []  # continues: no second Event
    assert tracker.open_episodes == 1
    assert tracker.update([]) == []  # ends
    assert tracker.open_episodes == 0
    assert [o.pod for o in tracker.update(over)] == ["p"]  # a new episode
