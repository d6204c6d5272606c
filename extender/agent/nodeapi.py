"""What the agent reads from and writes to the API server, behind one protocol, with two
implementations: the real API server (least privilege: its own Node, pods on it, Events,
Evictions) and a pods file (``--pods-file``, a ``kind: List``), which needs no API server and
records writes instead of making them.

The only agent module that uses the Kubernetes client (through ``extender.kube.client``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
import yaml

from extender.agent.errors import AgentError
from extender.kube.client import annotation_patch, event_body, load_configuration
from extender.model import PodKey

AGENT_COMPONENT = "gpu-extender-agent"


class AgentApi(Protocol):
    def node(self, name: str) -> dict[str, Any]: ...

    def node_pods(self, name: str) -> list[dict[str, Any]]: ...

    def patch_node_annotations(self, name: str, annotations: Mapping[str, str]) -> None: ...

    def patch_pod_annotations(self, pod: PodKey, annotations: Mapping[str, str]) -> None: ...

    def warn(self, pod: PodKey, reason: str, message: str) -> None: ...

    def evict(self, pod: PodKey) -> str:
        """``evicted``, or ``blocked`` when a PodDisruptionBudget refuses (HTTP 429)."""
        ...


def eviction_body(pod: PodKey) -> dict[str, Any]:
    """policy/v1 Eviction; the UID precondition never evicts a recreated namesake."""
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
            "deleteOptions": {"preconditions": {"uid": pod.uid}}}


class ApiServerAgentApi:
    def __init__(self, kubeconfig: str | None = None, timeout_s: float = 30.0) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(client.ApiClient(load_configuration(kubeconfig)))
        self._timeout = timeout_s

    def _call(self, action: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            response = method(*args, _preload_content=False, _request_timeout=self._timeout,
                              **kwargs)
            return response.data
        except Exception as exc:  # ApiException, urllib3 and socket errors
            status = getattr(exc, "status", None)
            reason = getattr(exc, "reason", None) or exc
            error = AgentError(f"{action}: {f'HTTP {status} ' if status else ''}{reason}")
            error.status = status  # type: ignore[attr-defined]
            raise error from exc

    def node(self, name: str) -> dict[str, Any]:
        doc: dict[str, Any] = orjson.loads(self._call(f"get node {name}",
                                                      self._core.read_node, name))
        return doc

    def node_pods(self, name: str) -> list[dict[str, Any]]:
        data = self._call(f"list pods on {name}", self._core.list_pod_for_all_namespaces,
                          field_selector=f"spec.nodeName={name}")
        items: list[dict[str, Any]] = orjson.loads(data).get("items") or []
        return items

    def patch_node_annotations(self, name: str, annotations: Mapping[str, str]) -> None:
        self._call(f"annotate node {name}", self._core.patch_node, name,
                   {"metadata": {"annotations": dict(annotations)}},
                   _content_type="application/merge-patch+json")

    def patch_pod_annotations(self, pod: PodKey, annotations: Mapping[str, str]) -> None:
        self._call(f"annotate pod {pod}", self._core.patch_namespaced_pod, pod.name,
                   pod.namespace, annotation_patch(pod.uid, annotations),
                   _content_type="application/merge-patch+json")

    def warn(self, pod: PodKey, reason: str, message: str) -> None:
        body = event_body(pod, reason=reason, message=message, event_type="Warning")
        body["source"] = {"component": AGENT_COMPONENT}
        body["reportingComponent"] = AGENT_COMPONENT
        self._call(f"record event for {pod}", self._core.create_namespaced_event,
                   pod.namespace, body)

    def evict(self, pod: PodKey) -> str:
        try:
            self._call(f"evict {pod}", self._core.create_namespaced_pod_eviction, pod.name,
                       pod.namespace, eviction_body(pod))
        except AgentError as exc:
            if getattr(exc, "status", None) == 429:  # a PodDisruptionBudget says not now
                return "blocked"
            raise
        return "evicted"


@dataclass
class FileAgentApi:
    """Reads a ``kind: List`` (JSON or YAML) of Pods, and optionally the Node; writes nothing."""

    path: Path
    writes: list[tuple[str, str, Any]] = field(default_factory=list)

    def _items(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text()
        except OSError as exc:
            raise AgentError(f"--pods-file {self.path}: cannot read ({exc.strerror})") from exc
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise AgentError(f"--pods-file {self.path}: not JSON or YAML ({exc})") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise AgentError(f"--pods-file {self.path}: must be a `kind: List` with `items` "
                             "(kubectl get pods -A -o json prints one)")
        return [i for i in doc["items"] if isinstance(i, dict)]

    def node(self, name: str) -> dict[str, Any]:
        for item in self._items():
            if item.get("kind") == "Node" and (item.get("metadata") or {}).get("name") == name:
                return item
        return {"metadata": {"name": name}}

    def node_pods(self, name: str) -> list[dict[str, Any]]:
        return [i for i in self._items() if i.get("kind", "Pod") == "Pod"]

    def patch_node_annotations(self, name: str, annotations: Mapping[str, str]) -> None:
        self.writes.append(("annotate-node", name, dict(annotations)))

    def patch_pod_annotations(self, pod: PodKey, annotations: Mapping[str, str]) -> None:
        self.writes.append(("annotate-pod", str(pod), dict(annotations)))

    def warn(self, pod: PodKey, reason: str, message: str) -> None:
        self.writes.append(("event", str(pod), f"{reason}: {message}"))

    def evict(self, pod: PodKey) -> str:
        self.writes.append(("evict", str(pod), None))
        return "recorded"
