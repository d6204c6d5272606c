"""``coordination.k8s.io/v1`` Leases: get, create, replace (with the resourceVersion as an
optimistic lock). What the capacity publisher's leader election needs and nothing else.

Implements ``extender.sync.leader.LeaseApi`` structurally; failures are our ``KubeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from extender.apiserver.errors import KubeError, NotFound, translate


class ApiServerLeases:
    def __init__(self, api_client: Any, *, request_timeout: float = 10.0) -> None:
        from kubernetes import client

        self._coordination = client.CoordinationV1Api(api_client)
        self._timeout = request_timeout

    @classmethod
    def from_configuration(cls, configuration: Any) -> ApiServerLeases:
        from kubernetes import client

        return cls(client.ApiClient(configuration))

    def _call(self, action: str, method: Any, *args: Any) -> dict[str, Any]:
        try:
            response = method(*args, _preload_content=False, _request_timeout=self._timeout)
            doc = orjson.loads(response.data)
        except Exception as exc:  # ApiException, urllib3, socket and JSON errors
            raise translate(exc, action) from exc
        if not isinstance(doc, dict):
            raise KubeError(f"{action}: expected a JSON object")
        return doc

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._call(f"get lease {namespace}/{name}",
                              self._coordination.read_namespaced_lease, name, namespace)
        except NotFound:
            return None

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._call(f"create lease in {namespace}",
                          self._coordination.create_namespaced_lease, namespace, dict(body))

    def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]
                      ) -> dict[str, Any]:
        return self._call(f"replace lease {namespace}/{name}",
                          self._coordination.replace_namespaced_lease, name, namespace,
                          dict(body))
