"""Who may write the annotations that say which GPU a pod holds (docs/handoff.md "Trust").

``gpu-extender.io/assigned``, ``assigned-observed`` and ``visible-devices`` and every
``nvidia.cdi.k8s.io/`` annotation decide which GPU a container gets (the NRI plugin injects the
CDI devices named; the runtime reads the env) and what the books count. Only the extender's
Binding writes them (``pods/binding`` does not pass through pod webhooks) and the node agent
corrects ``assigned-observed``: a pod CREATE that already carries one, or an UPDATE that
changes one, is refused unless the request comes from a trusted identity. In share pods the
env ``NVIDIA_VISIBLE_DEVICES`` may only be the webhook's own downward-API reference.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from extender.kube import objects
from extender.model import ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED, ANNOTATION_VISIBLE_DEVICES

PROTECTED_ANNOTATIONS = (ANNOTATION_ASSIGNED, ANNOTATION_OBSERVED, ANNOTATION_VISIBLE_DEVICES)
PROTECTED_PREFIXES = ("nvidia.cdi.k8s.io/",)
DEFAULT_TRUSTED_USERS = ("system:serviceaccount:kube-system:gpu-extender",)


def is_protected(key: str) -> bool:
    return key in PROTECTED_ANNOTATIONS or key.startswith(PROTECTED_PREFIXES)


def forged_annotations(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[str]:
    """The protected annotations the request writes: on CREATE (``old`` None) every one the
    pod carries, on UPDATE those added, changed or removed (sorted)."""
    new_annotations = objects.annotations(obj)
    if old is None:
        return sorted(k for k in new_annotations if is_protected(k))
    old_annotations = objects.annotations(old)
    keys = {k for k in (*new_annotations, *old_annotations) if is_protected(k)}
    return sorted(k for k in keys if new_annotations.get(k) != old_annotations.get(k))


def forgery_message(keys: Collection[str], user: str, trusted: Collection[str]) -> str:
    named = ", ".join(f"metadata.annotations[{k}]" for k in keys)
    return (f"gpu-extender: {named} may be written only by the extender's Binding and the "
            f"node agent ({', '.join(sorted(trusted))}), not by {user or 'an anonymous user'}: "
            f"they decide which GPU the pod's containers get; remove them")


def downward_reference(annotation: str = ANNOTATION_VISIBLE_DEVICES) -> dict[str, Any]:
    """The env entry's ``valueFrom`` the mutating webhook writes."""
    return {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or ()):
            if isinstance(container, Mapping):
                yield f"spec.{field}[{i}]", container


def foreign_visible_devices(pod: Mapping[str, Any], env_name: str) -> list[str]:
    """Field paths of ``env_name`` entries that are not the downward-API reference (a value
    of their own, another field, a ConfigMap): in a share pod they would pick the GPU."""
    expected = downward_reference()
    out = []
    for path, container in _containers(pod.get("spec") or {}):
        for j, entry in enumerate(container.get("env") or ()):
            if not isinstance(entry, Mapping) or entry.get("name") != env_name:
                continue
            value_from = entry.get("valueFrom")
            reference = (value_from or {}).get("fieldRef") if isinstance(value_from, Mapping) \
                else None
            same = isinstance(reference, Mapping) and \
                reference.get("fieldPath") == expected["fieldRef"]["fieldPath"]
            if not same or entry.get("value") not in (None, ""):
                out.append(f"{path}.env[{j}]")
    return out
