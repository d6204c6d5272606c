"""/proc/<pid>/cgroup -> (pod UID, container ID) for every layout the kubelet creates."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.agent.cgroup import ContainerRef, PidMapper, parse_cgroup

P = pytest.param

UID = "8f0c6f5a-1b2c-4d3e-9f00-0123456789ab"
SYS = UID.replace("-", "_")  # the systemd driver writes the UID with underscores
CID = "a" * 64


@pytest.mark.parametrize("text", [
    P(f"0::/kubepods/burstable/pod{UID}/{CID}\n", id="v2 cgroupfs burstable"),
    P(f"0::/kubepods/pod{UID}/{CID}\n", id="v2 cgroupfs guaranteed (no QoS level)"),
    P(f"0::/kubepods/besteffort/pod{UID}/{CID}\n", id="v2 cgroupfs besteffort"),
    P(f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SYS}.slice/"
      f"cri-containerd-{CID}.scope\n", id="v2 systemd containerd"),
    P(f"0::/kubepods.slice/kubepods-pod{SYS}.slice/crio-{CID}.scope\n",
      id="v2 systemd CRI-O guaranteed"),
    P(f"12:memory:/kubepods/burstable/pod{UID}/{CID}\n11:cpu,cpuacct:/kubepods/burstable/"
      f"pod{UID}/{CID}\n1:name=systemd:/kubepods/burstable/pod{UID}/{CID}\n",
      id="v1 cgroupfs, several hierarchies"),
    P(f"11:devices:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{SYS}"
      f".slice/docker-{CID}.scope\n", id="v1 systemd docker"),
    P(f"0::/system.slice/docker-{'b' * 64}.scope/kubepods/burstable/pod{UID}/{CID}\n",
      id="nested below a node container (kind)"),
    P(f"0::/../../kubepods-burstable-pod{SYS}.slice/cri-containerd-{CID}.scope\n",
      id="seen from another cgroup namespace"),
    P(f"12:pids:/\n0::/kubepods/burstable/pod{UID}/{CID}\n", id="hybrid v1 + v2"),
])
def test_every_layout_names_the_pod_and_container(text: str) -> None:
    assert parse_cgroup(text) == ContainerRef(UID, CID)


@pytest.mark.parametrize("text", [
    P("0::/system.slice/containerd.service\n", id="a host daemon"),
    P(f"0::/kubepods/burstable/pod{UID}\n", id="the pod's own cgroup, no container"),
    P(f"0::/kubepods.slice/kubepods-pod{SYS}.slice/crio-conmon-{CID}.scope\n",
      id="CRI-O's conmon is not the container"),
    P("", id="empty"),
    P("garbage", id="not a cgroup file"),
])
def test_processes_outside_containers_map_to_nothing(text: str) -> None:
    assert parse_cgroup(text) is None


def test_the_mapper_reads_the_host_proc_and_tolerates_ended_processes(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "cgroup").write_text(f"0::/kubepods/pod{UID}/{CID}\n")
    mapper = PidMapper(tmp_path)
    assert mapper.container_of(42) == ContainerRef(UID, CID)
    assert mapper.container_of(43) is None
