"""The node agent's API calls against a real API server, with least privilege: its own Node,
the pods bound to it, Events about them and Evictions (see manifests/agent.yaml).

Implements ``extender.agent.nodeapi.AgentApi`` structurally; failures are our ``KubeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from extender.apiserver.client import annotation_patch, event_body, load_configuration
from extender.apiserver.errors import KubeError, translate
from extender.model import PodKey

AGENT_COMPONENT = "gpu-extender-agent"


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
            raise translate(exc, action) from exc

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
        except KubeError as exc:
            if exc.status == 429:  # a PodDisruptionBudget says not now
                return "blocked"
            raise
        return "evicted"
