"""A client of the kubelet's PodResources API (``v1.PodResourcesLister/List`` on
``/var/lib/kubelet/pod-resources/kubelet.sock``): which device IDs each container really got.

The only module that imports the generated stubs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import grpc

from extender.agent.errors import PodResourcesError
from extender.agent.podresources import api_pb2, api_pb2_grpc

DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


@dataclass(frozen=True)
class KubeletPod:
    namespace: str
    name: str
    devices: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """container name -> resource name -> device IDs."""

    def device_ids(self, resource_prefix: str) -> tuple[str, ...]:
        """Every device ID of resources whose name starts with ``resource_prefix``, over all
        containers, in container order."""
        out: list[str] = []
        for resources in self.devices.values():
            for name, ids in resources.items():
                if name.startswith(resource_prefix):
                    out += ids
        return tuple(out)


def from_response(response: api_pb2.ListPodResourcesResponse) -> dict[tuple[str, str], KubeletPod]:
    out = {}
    for pod in response.pod_resources:
        containers: dict[str, dict[str, tuple[str, ...]]] = {}
        for container in pod.containers:
            resources: dict[str, tuple[str, ...]] = {}
            for dev in container.devices:
                resources[dev.resource_name] = (*resources.get(dev.resource_name, ()),
                                                *dev.device_ids)
            containers[container.name] = resources
        out[(pod.namespace, pod.name)] = KubeletPod(pod.namespace, pod.name, containers)
    return out


class PodResourcesClient:
    def __init__(self, socket_path: str = DEFAULT_SOCKET, timeout_s: float = 10.0) -> None:
        self._target = f"unix://{socket_path}"
        self._timeout = timeout_s
        self._channel = grpc.insecure_channel(self._target)
        self._stub = api_pb2_grpc.PodResourcesListerStub(self._channel)  # type: ignore[no-untyped-call]

    def list(self) -> dict[tuple[str, str], KubeletPod]:
        """(namespace, name) -> what the kubelet allocated; ``PodResourcesError`` when the
        kubelet cannot be asked."""
        try:
            response = self._stub.List(api_pb2.ListPodResourcesRequest(), timeout=self._timeout)
        except grpc.RpcError as exc:
            raise PodResourcesError(
                f"kubelet PodResources List on {self._target}: {exc.code().name} "
                f"({exc.details()}); mount the socket directory read-only into the agent "
                "or pass --pod-resources-socket") from exc
        return from_response(response)

    def close(self) -> None:
        self._channel.close()
