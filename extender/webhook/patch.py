"""JSON Patch (RFC 6902) operations that add what the mapping asks to a pod, and nothing it
already carries: applying the result and computing it again gives no operation
(``reinvocationPolicy: IfNeeded`` is safe).

Node affinity: terms of ``requiredDuringSchedulingIgnoredDuringExecution`` are OR-ed, so an
expression that must always hold is ANDed into *every* term. When the mapping has several
alternatives (types on different labels), each term is split into one term per alternative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.webhook.mapping import Expression

Operation = dict[str, Any]
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_AFFINITY_PATH = "/spec/affinity/nodeAffinity/" + _REQUIRED


def scheduler_name(spec: Mapping[str, Any], name: str) -> list[Operation]:
    """Move a pod that uses the default scheduler to ``name``."""
    current = spec.get("schedulerName")
    if current not in (None, "", "default-scheduler") or current == name:
        return []
    return [{"op": "replace" if current is not None else "add", "path": "/spec/schedulerName",
             "value": name}]


def runtime_class(spec: Mapping[str, Any], name: str) -> list[Operation]:
    """``runtimeClassName: name`` where the pod names none; a pod's own class is never
    overridden (a user who chose ``kata`` or ``nvidia-cdi`` meant it)."""
    if spec.get("runtimeClassName"):
        return []
    return [{"op": "add" if "runtimeClassName" not in spec else "replace",
             "path": "/spec/runtimeClassName", "value": name}]


def _implied(expression: Expression, term: Mapping[str, Any],
             node_selector: Mapping[str, str], partition_key: str | None) -> bool:
    """Does the term (with the pod's nodeSelector) already require at least this much?

    On the partition label any requirement the pod states stands (Flyte writes ``In
    [2g.10gb]`` or its own unpartitioned requirement): we never contradict it."""
    key, operator = expression["key"], expression["operator"]
    allowed = set(expression.get("values") or ())
    if key == partition_key and key in node_selector:
        return True
    if operator == "In" and node_selector.get(key) in allowed:
        return True
    for existing in term.get("matchExpressions") or ():
        if existing.get("key") != key:
            continue
        if key == partition_key or (existing.get("operator") == operator == "DoesNotExist"):
            return True
        if operator == "In" and existing.get("operator") == "In" and \
                set(existing.get("values") or ()) <= allowed:
            return True
    return False


def _missing(group: Sequence[Expression], term: Mapping[str, Any],
             node_selector: Mapping[str, str], partition_key: str | None
             ) -> list[Expression]:
    return [dict(e) for e in group if not _implied(e, term, node_selector, partition_key)]


def node_affinity(spec: Mapping[str, Any], groups: Sequence[Sequence[Expression]],
                  partition_key: str | None = None) -> list[Operation]:
    if not groups:
        return []
    node_selector = spec.get("nodeSelector") or {}
    affinity = spec.get("affinity")
    node_affinity_ = (affinity or {}).get("nodeAffinity")
    required = (node_affinity_ or {}).get(_REQUIRED)
    terms: list[Mapping[str, Any]] = list((required or {}).get("nodeSelectorTerms") or ())
    if not terms:
        if any(not _missing(g, {}, node_selector, partition_key) for g in groups):
            return []  # the nodeSelector already says it
        new_terms = [{"matchExpressions": _missing(g, {}, node_selector, partition_key)}
                     for g in groups]
        value: dict[str, Any] = {"nodeSelectorTerms": new_terms}
        if affinity is None:
            return [{"op": "add", "path": "/spec/affinity",
                     "value": {"nodeAffinity": {_REQUIRED: value}}}]
        if node_affinity_ is None:
            return [{"op": "add", "path": "/spec/affinity/nodeAffinity",
                     "value": {_REQUIRED: value}}]
        if required is None:
            return [{"op": "add", "path": _AFFINITY_PATH, "value": value}]
        return [{"op": "add", "path": f"{_AFFINITY_PATH}/nodeSelectorTerms",
                 "value": new_terms}]
    if len(groups) == 1:
        ops: list[Operation] = []
        for i, term in enumerate(terms):
            missing = _missing(groups[0], term, node_selector, partition_key)
            path = f"{_AFFINITY_PATH}/nodeSelectorTerms/{i}/matchExpressions"
            if not missing:
                continue
            if term.get("matchExpressions"):
                ops += [{"op": "add", "path": f"{path}/-", "value": e} for e in missing]
            else:
                ops.append({"op": "add", "path": path, "value": missing})
        return ops
    expanded: list[Mapping[str, Any]] = []
    changed = False
    for term in terms:
        if any(not _missing(g, term, node_selector, partition_key) for g in groups):
            expanded.append(term)
            continue
        changed = True
        for group in groups:
            added = _missing(group, term, node_selector, partition_key)
            expanded.append({**term, "matchExpressions": [
                *(term.get("matchExpressions") or ()), *added]})
    if not changed:
        return []
    return [{"op": "replace", "path": f"{_AFFINITY_PATH}/nodeSelectorTerms", "value": expanded}]


def _toleration_key(toleration: Mapping[str, Any]) -> tuple[Any, ...]:
    return (toleration.get("key") or "", toleration.get("operator") or "Equal",
            toleration.get("value") or "", toleration.get("effect") or "",
            toleration.get("tolerationSeconds"))


def tolerations(spec: Mapping[str, Any], wanted: Sequence[Mapping[str, Any]]
                ) -> list[Operation]:
    existing = list(spec.get("tolerations") or ())
    have = {_toleration_key(t) for t in existing}
    missing = []
    for toleration in wanted:
        key = _toleration_key(toleration)
        if key not in have:
            have.add(key)
            missing.append(dict(toleration))
    if not missing:
        return []
    if not existing:
        return [{"op": "add", "path": "/spec/tolerations", "value": missing}]
    return [{"op": "add", "path": "/spec/tolerations/-", "value": t} for t in missing]


def env_from_annotation(spec: Mapping[str, Any], env_name: str, annotation: str
                        ) -> list[Operation]:
    """``env_name`` from the pod annotation (downward API) in every container without it."""
    entry = {"name": env_name, "valueFrom": {"fieldRef": {
        "fieldPath": f"metadata.annotations['{annotation}']"}}}
    ops: list[Operation] = []
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or ()):
            env = container.get("env") or []
            if any(e.get("name") == env_name for e in env):
                continue
            path = f"/spec/{field}/{i}/env"
            ops.append({"op": "add", "path": f"{path}/-", "value": entry} if env else
                       {"op": "add", "path": path, "value": [entry]})
    return ops
