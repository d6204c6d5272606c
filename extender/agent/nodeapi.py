"""What the agent reads from and writes to the API server, behind one protocol, with two
implementations: the real API server (least privilege: its own Node, pods on it, Events,
Evictions) and a pods file (``--pods-file``, a ``kind: List``), which needs no API server and
records writes instead of making them.

The real implementation is ``extender.apiserver.node_agent.ApiServerAgentApi`` (only
``extender.apiserver`` talks to the Kubernetes client); this module holds the protocol and the
pods-file one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from extender.agent.errors import AgentError
from extender.kube import objects
from extender.model import PodKey


class AgentApi(Protocol):
    def node(self, name: str) -> dict[str, Any]: ...

    def node_pods(self, name: str) -> list[dict[str, Any]]: ...

    def patch_node_annotations(self, name: str, annotations: Mapping[str, str]) -> None: ...

    def patch_pod_annotations(self, pod: PodKey, annotations: Mapping[str, str]) -> None: ...

    def warn(self, pod: PodKey, reason: str, message: str) -> None: ...

    def evict(self, pod: PodKey) -> str:
        """``evicted``, or ``blocked`` when a PodDisruptionBudget refuses (HTTP 429)."""
        ...


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
            if item.get("kind") == "Node" and objects.name(item) == name:
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
