"""Read access to Kubernetes object JSON (the dicts the API returns): one place that knows
where a field lives and what an absent one reads as.

Every accessor tolerates a missing, ``null`` or wrong-typed section (``metadata: null`` happens in
hand-written dumps and in watch ``ERROR`` objects; ``metadata: 7`` in hostile requests) and
returns an empty value instead of raising: the shape is checked once at the edge
(``kube.shape``), and validation of what a field *means* belongs to the decoders, not here.
Strings come back as ``str`` (``""`` when absent), sections as read-only mappings (``{}`` when
absent).
"""


from collections.abc import Mapping
from typing import Any

from extender.model import PodKey

_EMPTY: Mapping[str, Any] = {}


def section(obj: object, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are objects, else an empty mapping. A ``dict`` (what JSON
    decodes to) is recognised by its type first: the ``Mapping`` check goes through the ABC
    machinery (~8 x slower), and every accessor of every decoded pod passes here."""
    value = obj.get(key) if type(obj) is dict or isinstance(obj, Mapping) else None
    return value if type(value) is dict or isinstance(value, Mapping) else _EMPTY


def _text(part: Mapping[str, Any], key: str) -> str:
    value = part.get(key)
    return value if isinstance(value, str) else ""


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` (of an object, or of a list: ``resourceVersion``, ``continue``)."""
    return section(obj, "metadata")


def name(obj: Mapping[str, Any]) -> str:
    return _text(meta(obj), "name")


def namespace(obj: Mapping[str, Any]) -> str:
    return _text(meta(obj), "namespace")


def uid(obj: Mapping[str, Any]) -> str:
    return _text(meta(obj), "uid")


def resource_version(obj: Mapping[str, Any]) -> str:
    return _text(meta(obj), "resourceVersion")


def labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return section(meta(obj), "labels")


def annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return section(meta(obj), "annotations")


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    """namespace/name and UID of a pod."""
    return PodKey(namespace(pod), name(pod), uid(pod))


def node_name(pod: Mapping[str, Any]) -> str:
    """``spec.nodeName``: the node a pod is bound to (``""``: not bound)."""
    return _text(section(pod, "spec"), "nodeName")
