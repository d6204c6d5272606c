"""Which GPU types a pod accepts and excludes: every place a pod may name a type, resolved
against the catalog and the platform's label mapping, and intersected.

The places: our ``gpu-extender.io/accelerator`` label and accelerators/exclude annotations,
HAMi's use/nouse annotations (when the platform accepts HAMi's form), a ``nodeSelector`` on a
type label, and the required node affinity (``In`` types a term, ``NotIn`` excludes from it).
Every error names the field, the value and what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.catalog import Catalog
from extender.errors import RequestError, did_you_mean, join_accepted
from extender.kube import objects
from extender.kube.forms import HAMI_NOUSE_TYPE, HAMI_USE_TYPE
from extender.kube.labels import LabelMapper
from extender.model import ANNOTATION_ACCELERATORS, ANNOTATION_EXCLUDE, LABEL_ACCELERATOR

AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


class TypeResolver:
    """Resolves a pod's type constraints against one catalog and label mapping; ``hami``: read
    HAMi's type annotations too."""

    def __init__(self, catalog: Catalog, labels: LabelMapper, *, hami: bool) -> None:
        self._catalog = catalog
        self._labels = labels
        self._hami = hami

    def types(self, pod: Mapping[str, Any]) -> tuple[frozenset[int] | None, frozenset[int], str]:
        """Accepted types (intersection of every place the pod names one) and excluded ones."""
        spec = pod.get("spec") or {}
        labels = objects.labels(pod)
        annotations = objects.annotations(pod)
        constraints: list[tuple[frozenset[int], str]] = []
        excluded: set[int] = set()

        if LABEL_ACCELERATOR in labels:
            field = f"metadata.labels[{LABEL_ACCELERATOR}]"
            constraints.append((self.resolve(labels[LABEL_ACCELERATOR], field), field))
        # HAMi matches its use/nouse annotations by substring of the device name; here each
        # entry is a type name matched exactly ("A100" is the family, never "A100-80GB").
        places = [(ANNOTATION_ACCELERATORS, True), (ANNOTATION_EXCLUDE, False)]
        if self._hami:
            places += [(HAMI_USE_TYPE, True), (HAMI_NOUSE_TYPE, False)]
        for name, accepts in places:
            if name not in annotations:
                continue
            field = f"metadata.annotations[{name}]"
            types = self.resolve_list(annotations[name], field)
            if accepts:
                constraints.append((types, field))
            else:
                excluded |= types
        for key, value in (spec.get("nodeSelector") or {}).items():
            if key in self._labels.type_label_keys:
                field = f"spec.nodeSelector[{key}]"
                constraints.append((self.resolve_label(key, str(value), field), field))
        affinity_types, affinity_excluded = self.affinity_types(spec)
        excluded |= affinity_excluded
        if affinity_types is not None:
            constraints.append(affinity_types)

        if not constraints:
            return None, frozenset(excluded), ""
        accepted = constraints[0][0]
        for types, _ in constraints[1:]:
            accepted = accepted & types
        sources = " and ".join(field for _, field in constraints)
        if not accepted:
            named = "; ".join(f"{f} = {self._catalog.describe(t)}" for t, f in constraints)
            raise RequestError(sources, named, "these type constraints have no type in common",
                               "constraints that agree on at least one type")
        if not accepted - excluded:
            raise RequestError(f"metadata.annotations[{ANNOTATION_EXCLUDE}]",
                               self._catalog.describe(excluded),
                               f"excludes every type the pod accepts "
                               f"({self._catalog.describe(accepted)})",
                               "an exclusion that leaves at least one accepted type")
        return accepted, frozenset(excluded), sources

    def affinity_types(self, spec: Mapping[str, Any]
                        ) -> tuple[tuple[frozenset[int], str] | None, set[int]]:
        """Required node affinity: a pod is typed when *every* term constrains a type label
        with ``In`` (terms are OR-ed, so one unconstrained term admits any type). ``NotIn``
        removes types from its own term only: a type is excluded when no term admits it."""
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = required.get("nodeSelectorTerms") or []
        every_type = frozenset(range(len(self._catalog)))
        union: set[int] = set()
        all_typed = bool(terms)
        for t, term in enumerate(terms):
            term_types: frozenset[int] | None = None
            term_excluded: set[int] = set()
            for e, expr in enumerate(term.get("matchExpressions") or []):
                key = expr.get("key")
                if key not in self._labels.type_label_keys:
                    continue
                field = f"{AFFINITY}.nodeSelectorTerms[{t}].matchExpressions[{e}]"
                values = [str(v) for v in expr.get("values") or []]
                resolved: set[int] = set()
                for v, value in enumerate(values):
                    resolved |= self.resolve_label(key, value, f"{field}.values[{v}]")
                operator = expr.get("operator")
                if operator == "In":
                    term_types = frozenset(resolved) if term_types is None \
                        else term_types & resolved
                elif operator == "NotIn":
                    term_excluded |= resolved
            if term_types is None:
                all_typed = False
            union |= (every_type if term_types is None else term_types) - term_excluded
        if all_typed:
            return (frozenset(union), f"{AFFINITY}.nodeSelectorTerms"), set()
        return None, set(every_type - union) if terms else set()

    def resolve(self, name: object, field: str) -> frozenset[int]:
        resolved = self._catalog.resolve(str(name)) if isinstance(name, str) else None
        if not resolved:
            accepted = self._catalog.accepted_names()
            raise RequestError(field, name, "unknown GPU type" + did_you_mean(name, accepted),
                               join_accepted(accepted))
        return resolved

    def resolve_list(self, text: object, field: str) -> frozenset[int]:
        if not isinstance(text, str) or not text.strip():
            raise RequestError(field, text, "must be a comma-separated list of GPU types",
                               join_accepted(self._catalog.accepted_names()))
        out: set[int] = set()
        for name in text.split(","):
            out |= self.resolve(name.strip(), field)
        return frozenset(out)

    def resolve_label(self, key: str, value: str, field: str) -> frozenset[int]:
        resolved = self._labels.resolve_value(key, value)
        if not resolved:
            raise RequestError(field, value, f"no known GPU type has {key}={value}",
                               join_accepted(self._catalog.accepted_names()))
        return resolved
