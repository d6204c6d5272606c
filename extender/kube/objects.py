"""Read access to Kubernetes object JSON (the dicts the API returns): one place that knows
where a field lives and what an absent one reads as.

Every accessor tolerates a missing or ``null`` section (``metadata: null`` happens in hand-written
dumps and in watch ``ERROR`` objects) and returns an empty value instead of raising: validation
of what a field *means* belongs to the decoders, not here. Strings come back as ``str``
(``""`` when absent), sections as read-only mappings (``{}`` when absent).
"""


from collections.abc import Mapping
from typing import Any

from extender.model import PodKey

_EMPTY: Mapping[str, Any] = {}


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` (of an object, or of a list: ``resourceVersion``, ``continue``)."""
    return obj.get("metadata") or _EMPTY


def name(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def uid(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def resource_version(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return meta(obj).get("labels") or _EMPTY


def annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return meta(obj).get("annotations") or _EMPTY


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    """namespace/name and UID of a pod."""
    return PodKey(namespace(pod), name(pod), uid(pod))


def node_name(pod: Mapping[str, Any]) -> str:
    """``spec.nodeName``: the node a pod is bound to (``""``: not bound)."""
    return str((pod.get("spec") or _EMPTY).get("nodeName") or "")
