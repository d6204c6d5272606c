"""The demand controller's objects: utility Pods, PodTemplates and ``autoscaling.x-k8s.io/v1``
ProvisioningRequests, listed by label, created and deleted in one namespace. Nothing else.

RBAC: ``pods`` list/create/delete, ``podtemplates`` list/create/delete,
``provisioningrequests.autoscaling.x-k8s.io`` list/create/delete (in the demand namespace).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import orjson

from extender.apiserver.errors import KubeError, NotFound, translate
from extender.kube import objects

DemandKind = Literal["Pod", "PodTemplate", "ProvisioningRequest"]
PR_GROUP = "autoscaling.x-k8s.io"
PR_VERSION = "v1"
PR_PLURAL = "provisioningrequests"


class DemandObjectApi(Protocol):
    def list_demand(self, kind: DemandKind, namespace: str, selector: str
                    ) -> list[dict[str, Any]]: ...

    def create_demand(self, kind: DemandKind, namespace: str,
                      body: Mapping[str, Any]) -> None: ...

    def annotate_demand(self, kind: DemandKind, namespace: str, name: str,
                        annotations: Mapping[str, str]) -> None:
        """Merge-patch the object's annotations (a ProvisioningRequest's spec is immutable,
        its metadata is not)."""

    def delete_demand(self, kind: DemandKind, namespace: str, name: str) -> None:
        """Delete at once (grace period 0); an object already gone is not an error."""


class ApiServerDemandObjects:
    def __init__(self, api_client: Any, *, request_timeout: float = 30.0) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._timeout = request_timeout

    @classmethod
    def from_configuration(cls, configuration: Any) -> ApiServerDemandObjects:
        from kubernetes import client

        return cls(client.ApiClient(configuration))

    def _call(self, action: str, method: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            response = method(*args, _preload_content=False, _request_timeout=self._timeout,
                              **kwargs)
            doc = orjson.loads(response.data)
        except Exception as exc:  # ApiException, urllib3, socket and JSON errors
            raise translate(exc, action) from exc
        if not isinstance(doc, dict):
            raise KubeError(f"{action}: expected a JSON object")
        return doc

    def list_demand(self, kind: DemandKind, namespace: str, selector: str
                    ) -> list[dict[str, Any]]:
        action = f"list {kind}s in {namespace} ({selector})"
        if kind == "ProvisioningRequest":
            doc = self._call(action, self._custom.list_namespaced_custom_object, PR_GROUP,
                             PR_VERSION, namespace, PR_PLURAL, label_selector=selector)
        elif kind == "PodTemplate":
            doc = self._call(action, self._core.list_namespaced_pod_template, namespace,
                             label_selector=selector)
        else:
            doc = self._call(action, self._core.list_namespaced_pod, namespace,
                             label_selector=selector)
        return [item for item in doc.get("items") or () if isinstance(item, dict)]

    def create_demand(self, kind: DemandKind, namespace: str, body: Mapping[str, Any]) -> None:
        name = objects.name(body)
        action = f"create {kind} {namespace}/{name}"
        if kind == "ProvisioningRequest":
            self._call(action, self._custom.create_namespaced_custom_object, PR_GROUP,
                       PR_VERSION, namespace, PR_PLURAL, dict(body))
        elif kind == "PodTemplate":
            self._call(action, self._core.create_namespaced_pod_template, namespace, dict(body))
        else:
            self._call(action, self._core.create_namespaced_pod, namespace, dict(body))

    def annotate_demand(self, kind: DemandKind, namespace: str, name: str,
                        annotations: Mapping[str, str]) -> None:
        action = f"annotate {kind} {namespace}/{name}"
        patch = {"metadata": {"annotations": dict(annotations)}}
        if kind == "ProvisioningRequest":
            self._call(action, self._custom.patch_namespaced_custom_object, PR_GROUP,
                       PR_VERSION, namespace, PR_PLURAL, name, patch)
        elif kind == "PodTemplate":
            self._call(action, self._core.patch_namespaced_pod_template, name, namespace, patch,
                       _content_type="application/merge-patch+json")
        else:
            self._call(action, self._core.patch_namespaced_pod, name, namespace, patch,
                       _content_type="application/merge-patch+json")

    def delete_demand(self, kind: DemandKind, namespace: str, name: str) -> None:
        action = f"delete {kind} {namespace}/{name}"
        try:
            if kind == "ProvisioningRequest":
                self._call(action, self._custom.delete_namespaced_custom_object, PR_GROUP,
                           PR_VERSION, namespace, PR_PLURAL, name, grace_period_seconds=0)
            elif kind == "PodTemplate":
                self._call(action, self._core.delete_namespaced_pod_template, name, namespace,
                           grace_period_seconds=0)
            else:
                self._call(action, self._core.delete_namespaced_pod, name, namespace,
                           grace_period_seconds=0)
        except NotFound:
            return
