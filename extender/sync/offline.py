"""Offline mode: the cluster is a file, binds are recorded in memory.

The file is what ``kubectl get nodes,pods -A -o json`` prints: a ``kind: List`` whose items
are Nodes and Pods (a ``NodeList`` or ``PodList`` works too; YAML is accepted). Nothing talks to
an API server: ``OfflineCluster`` plays one for the binder (annotate, bind, events) and feeds
every bound pod back through the same ``InventoryApplier`` a watch would, so a bind is visible
to the next filter exactly as it would be in a cluster.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from extender.apiserver.errors import Conflict, NotFound
from extender.errors import ExtenderError, yaml_problem
from extender.inventory.store import Inventory
from extender.kube import objects
from extender.kube.shape import ShapeError, check_pod
from extender.model import PodKey
from extender.sync.apply import InventoryApplier

LIST_KINDS = ("List", "NodeList", "PodList")


class ClusterFileError(ExtenderError):
    """The cluster file cannot be used; the message names the item."""


@dataclass(frozen=True)
class ClusterObjects:
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]


def load_cluster_file(path: str | Path) -> ClusterObjects:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ClusterFileError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            document = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ClusterFileError(f"{path}: neither JSON nor YAML ({yaml_problem(exc)})") \
                from exc
    return parse_cluster_document(document, str(path))


def parse_cluster_document(document: object, source: str = "cluster file") -> ClusterObjects:
    if not isinstance(document, dict) or document.get("kind") not in LIST_KINDS:
        raise ClusterFileError(f"{source}: expected a kind: List of Nodes and Pods (what "
                               "`kubectl get nodes,pods -A -o json` prints)")
    items = document.get("items")
    if not isinstance(items, list):
        raise ClusterFileError(f"{source}: items: must be a list")
    implied = {"NodeList": "Node", "PodList": "Pod"}.get(str(document.get("kind")))
    nodes: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ClusterFileError(f"{source}: items[{i}]: must be an object")
        kind = item.get("kind") or implied
        name = objects.meta(item).get("name")
        if kind not in ("Node", "Pod"):
            continue  # other objects in the dump do not concern GPUs
        if not isinstance(name, str) or not name:
            raise ClusterFileError(f"{source}: items[{i}].metadata.name: required")
        (nodes if kind == "Node" else pods).append(item)
    return ClusterObjects(nodes, pods)


class OfflineCluster:
    """An in-memory API server for pods (``PodWriter``) on top of a loaded file."""

    def __init__(self, applier: InventoryApplier, inventory: Inventory, *,
                 max_events: int = 1000) -> None:
        self._applier = applier
        self._inventory = inventory
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.events: deque[dict[str, str]] = deque(maxlen=max_events)
        self._version = 0

    def load(self, objects: ClusterObjects) -> None:
        """Replace everything with the file's objects; the inventory is then synced."""
        with self._lock:
            self._pods = {_name_of(pod): copy.deepcopy(pod) for pod in objects.pods}
        self._applier.replace_nodes(objects.nodes)
        self._applier.replace_pods(objects.pods)
        self._inventory.mark_synced()

    def admit(self, pod: Mapping[str, Any]) -> None:
        """Remember a pending pod kube-scheduler asked about (it is not in the file), so a
        bind of it can be recorded. Only a pod of a valid shape (``kube.shape``): an API server
        holds no other, and the verb already answers such a pod with its problem (a copy of a
        pod nested 300 deep would raise here)."""
        try:
            check_pod(pod)
        except ShapeError:
            return
        key = _name_of(pod)
        with self._lock:
            if key not in self._pods:
                # a JSON round trip copies a decoded body several times faster than deepcopy
                self._pods[key] = orjson.loads(orjson.dumps(pod))

    # -- PodWriter ---------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        with self._lock:
            pod = self._pods.get((namespace, name))
            if pod is None:
                raise NotFound(f"pod {namespace}/{name} not found", status=404)
            return copy.deepcopy(pod)

    def patch_pod_annotations(self, namespace: str, name: str, uid: str,
                              annotations: Mapping[str, str]) -> None:
        with self._lock:
            pod = self._existing(namespace, name, uid)
            meta = _section(pod, "metadata")
            _section(meta, "annotations").update(annotations)
            self._bump(meta)

    def create_binding(self, namespace: str, name: str, uid: str, node: str,
                       annotations: Mapping[str, str] | None = None) -> None:
        with self._lock:
            pod = self._existing(namespace, name, uid)
            spec = _section(pod, "spec")
            if spec.get("nodeName"):
                raise Conflict(f"pod {namespace}/{name} is already assigned to node "
                               f"{spec['nodeName']!r}", status=409)
            spec["nodeName"] = node
            meta = _section(pod, "metadata")
            if annotations:  # as the API server does: in the same write
                _section(meta, "annotations").update(annotations)
            self._bump(meta)
            bound = copy.deepcopy(pod)
        # What the watch would deliver next: the bound pod, with its annotations.
        self._applier.pod_event("MODIFIED", bound)

    def record_event(self, pod: PodKey, *, reason: str, message: str,
                     event_type: str = "Normal") -> None:
        self.events.append({"pod": str(pod), "reason": reason, "message": message,
                            "type": event_type})

    def _existing(self, namespace: str, name: str, uid: str) -> dict[str, Any]:
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found", status=404)
        actual = objects.uid(pod)
        if uid and actual and actual != uid:
            raise Conflict(f"Precondition failed: UID in precondition: {uid}, UID in object "
                           f"meta: {actual}", status=409)
        return pod

    def _bump(self, meta: dict[str, Any]) -> None:
        self._version += 1
        meta["resourceVersion"] = f"offline-{self._version}"

    def pods(self) -> list[dict[str, Any]]:
        with self._lock:
            return [copy.deepcopy(pod) for pod in self._pods.values()]


def _name_of(pod: Mapping[str, Any]) -> tuple[str, str]:
    return objects.namespace(pod), objects.name(pod)


def _section(document: dict[str, Any], key: str) -> dict[str, Any]:
    """``document[key]``, made an empty object where it is missing or null (a pod's shape
    allows a null part; the API server would hold an empty one)."""
    value = document.get(key)
    if not isinstance(value, dict):
        value = document[key] = {}
    return value
