"""An in-memory API server implementing the tiny client protocol (``ResourceLister`` +
``PodWriter``), with the semantics the binder relies on: the UID precondition, 409 for a pod
that is already bound, and optional latency / failure injection for concurrency tests."""

from __future__ import annotations

import copy
import random
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from extender.apiserver.client import ObjectList, ResourceKind, WatchStream
from extender.apiserver.errors import Conflict, KubeError, NotFound, Unavailable
from extender.model import PodKey


class _EventStream:
    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines

    def chunks(self) -> Iterator[bytes]:
        yield from self._lines

    def close(self) -> None:
        pass


class FakeApiServer:
    def __init__(self, nodes: Sequence[Mapping[str, Any]] = (),
                 pods: Sequence[Mapping[str, Any]] = (), *,
                 latency: float = 0.0, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._version = 100
        self.log: list[tuple[int, str, str, dict[str, Any]]] = []
        """(resourceVersion, kind, event type, object): what a watch replays."""
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.services: dict[tuple[str, str], dict[str, Any]] = {}
        for node in nodes:
            self.add_node(node)
        for pod in pods:
            self.add_pod(pod)
        self.latency = latency
        self._rng = random.Random(seed)
        self.fail_bindings: set[str] = set()
        """Pod names whose Binding fails with 500 (after the annotation patch)."""
        self.fail_patches: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.events: list[dict[str, Any]] = []

    # -- setup -------------------------------------------------------------------------------

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    def _emit(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        version = int(obj["metadata"]["resourceVersion"])
        self.log.append((version, kind, event_type, copy.deepcopy(obj)))

    def delete_pod(self, namespace: str, name: str) -> None:
        with self._lock:
            pod = self.pods.pop((namespace, name))
            pod["metadata"]["resourceVersion"] = self._next_version()
            self._emit("pods", "DELETED", pod)

    def add_node(self, node: Mapping[str, Any]) -> None:
        with self._lock:
            stored: dict[str, Any] = copy.deepcopy(dict(node))
            stored.setdefault("metadata", {})["resourceVersion"] = self._next_version()
            self.nodes[stored["metadata"]["name"]] = stored
            self._emit("nodes", "ADDED", stored)

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        with self._lock:
            stored: dict[str, Any] = copy.deepcopy(dict(pod))
            meta = stored.setdefault("metadata", {})
            meta.setdefault("namespace", "default")
            meta.setdefault("uid", f"uid-{meta['namespace']}-{meta['name']}")
            meta["resourceVersion"] = self._next_version()
            self.pods[(meta["namespace"], meta["name"])] = stored
            self._emit("pods", "ADDED", stored)

    def add_service(self, service: Mapping[str, Any]) -> None:
        with self._lock:
            stored: dict[str, Any] = copy.deepcopy(dict(service))
            meta = stored.setdefault("metadata", {})
            meta.setdefault("namespace", "default")
            meta["resourceVersion"] = self._next_version()
            self.services[(meta["namespace"], meta["name"])] = stored
            self._emit("services", "ADDED", stored)

    # -- ResourceLister ----------------------------------------------------------------------

    def list_objects(self, kind: ResourceKind) -> ObjectList:
        with self._lock:
            store: Mapping[Any, dict[str, Any]] = {"nodes": self.nodes, "services": self.services
                                                   }.get(kind, self.pods)
            items = [copy.deepcopy(o) for o in store.values()]
            return ObjectList(items, str(self._version))

    def watch_objects(self, kind: ResourceKind, resource_version: str,
                      timeout_seconds: int) -> WatchStream:
        """Replays the events after ``resource_version``, then ends (the server's timeout)."""
        with self._lock:
            since = int(resource_version or 0)
            lines = [orjson.dumps({"type": t, "object": o}) + b"\n"
                     for v, k, t, o in self.log if k == kind and v > since]
        return _EventStream(lines)

    # -- PodWriter ---------------------------------------------------------------------------

    def _pause(self) -> None:
        if self.latency:
            time.sleep(self._rng.uniform(0, self.latency))

    def _pod(self, namespace: str, name: str, uid: str = "") -> dict[str, Any]:
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise NotFound(f"pods {name!r} not found", status=404)
        if uid and pod["metadata"]["uid"] != uid:
            raise Conflict("Precondition failed: UID in precondition", status=409)
        return pod

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        self._pause()
        with self._lock:
            self.calls.append(("get", name))
            return copy.deepcopy(self._pod(namespace, name))

    def patch_pod_annotations(self, namespace: str, name: str, uid: str,
                              annotations: Mapping[str, str]) -> None:
        self._pause()
        with self._lock:
            self.calls.append(("patch", name))
            if name in self.fail_patches:
                raise Unavailable("injected patch failure", status=500)
            pod = self._pod(namespace, name, uid)
            pod["metadata"].setdefault("annotations", {}).update(annotations)
            pod["metadata"]["resourceVersion"] = self._next_version()
            self._emit("pods", "MODIFIED", pod)

    def create_binding(self, namespace: str, name: str, uid: str, node: str,
                       annotations: Mapping[str, str] | None = None) -> None:
        self._pause()
        with self._lock:
            self.calls.append(("bind", name))
            if name in self.fail_bindings:
                raise KubeError("injected binding failure", status=500)
            pod = self._pod(namespace, name, uid)
            current = pod["spec"].get("nodeName")
            if current:
                raise Conflict(f'pod {name} is already assigned to node "{current}"',
                               status=409)
            if node not in self.nodes:
                raise NotFound(f'nodes "{node}" not found', status=404)
            pod["spec"]["nodeName"] = node
            if annotations:  # the API server writes them in the same update
                pod["metadata"].setdefault("annotations", {}).update(annotations)
            pod["metadata"]["resourceVersion"] = self._next_version()
            self._emit("pods", "MODIFIED", pod)

    def record_node_event(self, node: str, uid: str, *, reason: str, message: str,
                          event_type: str = "Warning") -> None:
        with self._lock:
            self.events.append({"node": node, "uid": uid, "reason": reason,
                                "message": message, "type": event_type})

    def record_event(self, pod: PodKey, *, reason: str, message: str,
                     event_type: str = "Normal") -> None:
        self.create_event(pod, reason=reason, message=message, event_type=event_type,
                          count=1)

    def create_event(self, pod: PodKey, *, reason: str, message: str, event_type: str,
                     count: int) -> str:
        with self._lock:
            self.events.append({"pod": str(pod), "reason": reason, "message": message,
                                "type": event_type, "count": count,
                                "name": f"{pod.name}.{len(self.events)}"})
            return str(self.events[-1]["name"])

    def update_event(self, pod: PodKey, name: str, *, message: str, count: int) -> None:
        with self._lock:
            event = next((e for e in self.events if e.get("name") == name), None)
            if event is None:
                raise NotFound(f"event {name} not found", status=404)
            event |= {"message": message, "count": count}
