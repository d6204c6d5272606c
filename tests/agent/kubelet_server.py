"""A real gRPC server speaking the kubelet's PodResources v1 proto on a unix socket: the seam
where tests stand in for the kubelet (the agent's client cannot tell the difference)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc

from extender.agent.podresources import api_pb2, api_pb2_grpc

# (namespace, pod) -> container -> resource -> device IDs
Answer = Mapping[tuple[str, str], Mapping[str, Mapping[str, Sequence[str]]]]


class FakeKubelet(api_pb2_grpc.PodResourcesListerServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answer: Answer = {}
        self.calls = 0

    def give(self, answer: Answer) -> None:
        with self._lock:
            self._answer = answer

    def List(self, request: Any, context: Any) -> Any:  # noqa: N802 - the proto's name
        with self._lock:
            self.calls += 1
            answer = self._answer
        pods = []
        for (namespace, name), containers in answer.items():
            pods.append(api_pb2.PodResources(
                name=name, namespace=namespace,
                containers=[api_pb2.ContainerResources(
                    name=container,
                    devices=[api_pb2.ContainerDevices(resource_name=res, device_ids=list(ids))
                             for res, ids in resources.items()])
                    for container, resources in containers.items()]))
        return api_pb2.ListPodResourcesResponse(pod_resources=pods)


@contextmanager
def fake_kubelet(directory: Path) -> Iterator[tuple[FakeKubelet, str]]:
    socket = str(directory / "kubelet.sock")
    servicer = FakeKubelet()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_PodResourcesListerServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    try:
        yield servicer, socket
    finally:
        server.stop(grace=None)
