"""A thin API client: raw JSON in and out, our errors, nothing else.

The ``kubernetes`` package is only used for its configuration loading and its HTTP plumbing:
every call passes ``_preload_content=False`` and parses the body with orjson, because the
client's model layer is slow (kubernetes-client/python#1231) and cannot even read the answer to
a Binding (it returns a ``Status``; deserializing it as ``V1Binding`` raises ``ValueError`` on
``target``, kubernetes-client/python#825).

The two protocols below are all the rest of the service needs, so tests and the offline mode
provide their own in-memory implementations.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

from extender.apiserver.errors import KubeError, NotFound, translate
from extender.apiserver.events import EventWriter
from extender.apiserver.transport import RawTransport, events_path, pod_path
from extender.errors import JsonObjectError
from extender.jsonobj import load_object
from extender.kube import objects
from extender.model import PodKey

ResourceKind = Literal["nodes", "pods", "resourceslices", "resourceclaims", "deviceclasses",
                       "services"]
DRA_KINDS: tuple[ResourceKind, ...] = ("resourceslices", "resourceclaims", "deviceclasses")
"""``resource.k8s.io/v1`` kinds the DRA interop watches (``sync/dra.py``)."""

TERMINAL_PODS_EXCLUDED = "status.phase!=Succeeded,status.phase!=Failed"
"""Pods that finished hold nothing; the API server filters them out of lists and turns a pod
that finishes into a DELETED watch event."""

LIST_PAGE_SIZE = 500
COMPONENT = "gpu-extender"


@dataclass(frozen=True)
class ObjectList:
    """A complete list and the resourceVersion to start watching from."""

    items: list[dict[str, Any]]
    resource_version: str


class WatchStream(Protocol):
    """An open watch: raw bytes as they arrive (newline-delimited JSON events)."""

    def chunks(self) -> Iterator[bytes]: ...

    def close(self) -> None:
        """Abort the stream from another thread (``chunks`` then ends or raises)."""


class ResourceLister(Protocol):
    def list_objects(self, kind: ResourceKind) -> ObjectList: ...

    def watch_objects(self, kind: ResourceKind, resource_version: str,
                      timeout_seconds: int) -> WatchStream: ...


class PodWriter(Protocol):
    """What binding a pod needs; raises ``KubeError`` subclasses."""

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]: ...

    def patch_pod_annotations(self, namespace: str, name: str, uid: str,
                              annotations: Mapping[str, str]) -> None: ...

    def create_binding(self, namespace: str, name: str, uid: str, node: str,
                       annotations: Mapping[str, str] | None = None) -> None:
        """Bind; ``annotations`` are written onto the pod in the same update."""

    def record_event(self, pod: PodKey, *, reason: str, message: str,
                     event_type: str = "Normal") -> None: ...


class ClaimReader(Protocol):
    """Reads one ResourceClaim (a pod's DRA allocation, at bind); raises ``KubeError``."""

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]: ...


class NodeEventWriter(Protocol):
    def record_node_event(self, node: str, uid: str, *, reason: str, message: str,
                          event_type: str = "Warning") -> None: ...


class NodeStatusWriter(Protocol):
    """The ``nodes/status`` subresource (the share capacity the leader publishes)."""

    def patch_node_status(self, node: str, status: Mapping[str, Any]) -> None:
        """Merge-patch ``status`` into the node's status."""


class KubeApi(ResourceLister, PodWriter, NodeEventWriter, EventWriter, ClaimReader,
              Protocol):
    """Everything the online service needs from an API server."""


def binding_body(namespace: str, name: str, uid: str, node: str,
                 annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The Binding kube-scheduler itself would send; the UID is a precondition that guards
    against a pod deleted and recreated under the same name.

    The API server copies a Binding's ``metadata.annotations`` onto the pod in the same write
    that sets ``spec.nodeName`` (``pkg/registry/core/pod/storage``, ``setPodNodeAndMetadata``;
    checked against the real kube-apiserver in tests/e2e), so one request both records the
    assignment and binds."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Binding", "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def annotation_patch(uid: str, annotations: Mapping[str, str]) -> dict[str, Any]:
    """A merge patch; ``metadata.uid`` makes it fail on a recreated pod of the same name."""
    return {"metadata": {"uid": uid, "annotations": dict(annotations)}}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_body(pod: PodKey, *, reason: str, message: str, event_type: str) -> dict[str, Any]:
    now = _now()
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{pod.name}.", "namespace": pod.namespace},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace,
                           "name": pod.name, "uid": pod.uid},
        "reason": reason, "message": message[:1000], "type": event_type,
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
        "reportingInstance": socket.gethostname(),
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    }


def node_event_body(node: str, uid: str, *, reason: str, message: str,
                    event_type: str) -> dict[str, Any]:
    """An event about a Node (cluster-scoped: filed in ``default``, as the kubelet does)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{node}.", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid},
        "reason": reason, "message": message[:1000], "type": event_type,
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
        "reportingInstance": socket.gethostname(),
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    }


def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """The client configuration: the in-cluster service account when running in a pod (and
    no kubeconfig is named), else ``kubeconfig`` / ``$KUBECONFIG`` / ``~/.kube/config``.
    ``context``: that kubeconfig context instead of its current one. Opens no connection
    (safe before gunicorn forks); ``KubeError`` when none works."""
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        if kubeconfig is None and context is None and "KUBERNETES_SERVICE_HOST" in os.environ:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=kubeconfig, context=context,
                                    client_configuration=configuration)
    except Exception as exc:  # ConfigException, FileNotFoundError, YAML errors
        raise KubeError(f"no usable cluster configuration: {exc} (run in a pod with a "
                        "service account, set KUBECONFIG or pass --kubeconfig)") from exc
    return configuration


class _HttpWatchStream:
    def __init__(self, response: Any, action: str) -> None:
        self._response = response
        self._action = action

    def chunks(self) -> Iterator[bytes]:
        try:
            yield from self._response.stream(amt=None, decode_content=True)
        except Exception as exc:  # urllib3 raises many types mid-stream
            raise translate(exc, self._action) from exc
        finally:
            self._response.release_conn()

    def close(self) -> None:
        # aborting a stream that may already be closed: nothing to report
        with contextlib.suppress(Exception):
            self._response.shutdown()


class ApiServerClient:
    """``ResourceLister`` + ``PodWriter`` over one ``kubernetes.client.ApiClient``.

    Build it after gunicorn forks: urllib3 connection pools are not fork-safe.
    """

    def __init__(self, api_client: Any, *, request_timeout: float = 30.0) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(api_client)
        self._resource = client.ResourceV1Api(api_client)
        self._timeout = request_timeout
        # the writes on the bind path (the Binding, events): raw bytes, a pool of their own
        self._raw = RawTransport(api_client, timeout=request_timeout)

    @classmethod
    def from_configuration(cls, configuration: Any, *,
                           request_timeout: float = 30.0) -> ApiServerClient:
        """A client for a loaded ``kubernetes.client.Configuration``."""
        from kubernetes import client

        return cls(client.ApiClient(configuration), request_timeout=request_timeout)

    # -- ResourceLister --------------------------------------------------------------------

    def list_objects(self, kind: ResourceKind) -> ObjectList:
        items: list[dict[str, Any]] = []
        token: str | None = None
        resource_version = ""
        while True:
            kwargs: dict[str, Any] = {"limit": LIST_PAGE_SIZE, "_preload_content": False,
                                      "_request_timeout": self._timeout * 4}
            if token:
                kwargs["_continue"] = token
            page = self._call(f"list {kind}", self._lister(kind), **kwargs)
            meta = objects.meta(page)
            # Pages of one list share the first page's resourceVersion (a consistent read).
            resource_version = resource_version or str(meta.get("resourceVersion", ""))
            items.extend(page.get("items") or [])
            token = meta.get("continue") or None
            if not token:
                return ObjectList(items, resource_version)

    def watch_objects(self, kind: ResourceKind, resource_version: str,
                      timeout_seconds: int) -> WatchStream:
        action = f"watch {kind}"
        try:
            response = self._lister(kind)(
                watch=True, resource_version=resource_version, allow_watch_bookmarks=True,
                timeout_seconds=timeout_seconds, _preload_content=False,
                # the read timeout notices a dead connection the server never closed
                _request_timeout=(10.0, timeout_seconds + 30.0))
        except Exception as exc:
            raise translate(exc, action) from exc
        return _HttpWatchStream(response, action)

    def _lister(self, kind: ResourceKind) -> Any:
        if kind == "nodes":
            return self._core.list_node
        if kind == "resourceslices":
            return self._resource.list_resource_slice
        if kind == "resourceclaims":
            return self._resource.list_resource_claim_for_all_namespaces
        if kind == "deviceclasses":
            return self._resource.list_device_class
        if kind == "services":
            return self._core.list_service_for_all_namespaces

        def list_pods(**kwargs: Any) -> Any:
            return self._core.list_pod_for_all_namespaces(
                field_selector=TERMINAL_PODS_EXCLUDED, **kwargs)
        return list_pods

    # -- PodWriter ---------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._call(f"get pod {namespace}/{name}", self._core.read_namespaced_pod,
                          name, namespace, _preload_content=False,
                          _request_timeout=self._timeout)

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return self._call(f"get resourceclaim {namespace}/{name}",
                          self._resource.read_namespaced_resource_claim, name, namespace,
                          _preload_content=False, _request_timeout=self._timeout)

    def patch_pod_annotations(self, namespace: str, name: str, uid: str,
                              annotations: Mapping[str, str]) -> None:
        # The generated client would pick json-patch for PATCH; a dict is a merge patch.
        self._call(f"annotate pod {namespace}/{name}", self._core.patch_namespaced_pod,
                   name, namespace, annotation_patch(uid, annotations),
                   _content_type="application/merge-patch+json", _preload_content=False,
                   _request_timeout=self._timeout)

    def create_binding(self, namespace: str, name: str, uid: str, node: str,
                       annotations: Mapping[str, str] | None = None) -> None:
        """One keep-alive POST of orjson bytes (``transport``): the bind path's only API
        request."""
        self._raw.post(pod_path(namespace, name, "binding"),
                       orjson.dumps(binding_body(namespace, name, uid, node, annotations)),
                       f"bind pod {namespace}/{name} to {node}")

    def record_event(self, pod: PodKey, *, reason: str, message: str,
                     event_type: str = "Normal") -> None:
        self.create_event(pod, reason=reason, message=message, event_type=event_type,
                          count=1)

    # -- EventWriter (``events.EventQueue``) -------------------------------------------------

    def create_event(self, pod: PodKey, *, reason: str, message: str, event_type: str,
                     count: int) -> str:
        body = event_body(pod, reason=reason, message=message, event_type=event_type)
        body["count"] = count
        answer = self._raw.post(events_path(pod.namespace), orjson.dumps(body),
                                f"record event for pod {pod}")
        try:
            return str(objects.name(orjson.loads(answer.data)))
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            return ""  # written; without its name the next one of its kind starts anew

    def update_event(self, pod: PodKey, name: str, *, message: str, count: int) -> None:
        if not name:
            raise NotFound(f"event of pod {pod} has no name", status=404)
        self._raw.patch(events_path(pod.namespace, name), orjson.dumps(
            {"count": count, "message": message[:1000], "lastTimestamp": _now()}),
            f"update event {name} of pod {pod}")

    def record_node_event(self, node: str, uid: str, *, reason: str, message: str,
                          event_type: str = "Warning") -> None:
        self._call(f"record event for node {node}", self._core.create_namespaced_event,
                   "default", node_event_body(node, uid, reason=reason, message=message,
                                              event_type=event_type),
                   _preload_content=False, _request_timeout=self._timeout, parse=False)

    # -- NodeStatusWriter --------------------------------------------------------------------

    def patch_node_status(self, node: str, status: Mapping[str, Any]) -> None:
        self._call(f"patch status of node {node}", self._core.patch_node_status, node,
                   {"status": dict(status)}, _content_type="application/merge-patch+json",
                   _preload_content=False, _request_timeout=self._timeout, parse=False)

    @staticmethod
    def _call(action: str, method: Any, *args: Any, parse: bool = True,
              **kwargs: Any) -> dict[str, Any]:
        try:
            response = method(*args, **kwargs)
            data = response.data
        except Exception as exc:  # ApiException, urllib3 errors, socket errors
            raise translate(exc, action) from exc
        if not parse:
            return {}
        try:
            return load_object(data, f"{action}: the API server's answer")
        except JsonObjectError as exc:
            raise KubeError(str(exc)) from exc
