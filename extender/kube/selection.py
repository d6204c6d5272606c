"""A pod's required node selection (``nodeSelector`` and required node affinity) as a small
hashable value, and what it means against the nodes of the inventory.

kube-scheduler's semantics (``component-helpers/scheduling/corev1/nodeaffinity``): every
``nodeSelector`` pair must match, and at least one ``nodeSelectorTerms`` entry must match; inside
a term every expression must match; an empty term matches nothing. ``In``/``NotIn``/``Exists``/
``DoesNotExist``/``Gt``/``Lt`` on labels, ``In``/``NotIn`` on ``metadata.name`` (matchFields).

``SelectionTyping`` answers "which GPU types can this selection ever reach?" against the label
index of the inventory's GPU nodes. The index is rebuilt when the inventory's node map changes
(a node added, removed or relabelled, not on pod events), and the answer is cached per distinct
selection, so the per-node hot path never sees a selector.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.model import NodeInfo

Expression = tuple[str, str, tuple[str, ...]]
"""(key, operator, values); key ``metadata.name`` with a ``field:`` prefix for matchFields."""
FIELD_NAME = "field:metadata.name"
_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class NodeSelection:
    selector: tuple[tuple[str, str], ...] = ()
    """``nodeSelector`` pairs, sorted."""
    terms: tuple[tuple[Expression, ...], ...] | None = None
    """Required affinity terms (OR of ANDs); ``None``: no required affinity."""

    @property
    def empty(self) -> bool:
        return not self.selector and self.terms is None

    def describe(self) -> str:
        parts = [f"spec.nodeSelector[{k}]={v}" for k, v in self.selector]
        if self.terms is not None:
            parts.append(f"{_AFFINITY}.nodeSelectorTerms")
        return " and ".join(parts)


def selection_of(spec: Mapping[str, Any]) -> NodeSelection:
    """The required node selection of a pod spec (malformed parts are skipped: the API server
    validated the pod)."""
    selector = tuple(sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items()))
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = None
    if isinstance(required, Mapping):
        terms = tuple(
            tuple(sorted(
                [(str(e.get("key")), str(e.get("operator")),
                  tuple(sorted(str(v) for v in e.get("values") or ())))
                 for e in term.get("matchExpressions") or ()]
                + [("field:" + str(e.get("key")), str(e.get("operator")),
                    tuple(sorted(str(v) for v in e.get("values") or ())))
                   for e in term.get("matchFields") or ()]))
            for term in required.get("nodeSelectorTerms") or ())
    return NodeSelection(selector, terms)


def pinned_values(selection: NodeSelection, key: str) -> frozenset[str] | None:
    """Values of ``key`` every node the selection admits must have (``None``: not pinned):
    the nodeSelector value, or the union of each term's ``In`` values when every term has one."""
    for k, v in selection.selector:
        if k == key:
            return frozenset((v,))
    if not selection.terms:
        return None
    union: set[str] = set()
    for term in selection.terms:
        values = [set(vals) for k, op, vals in term if k == key and op == "In"]
        if not values:
            return None
        union |= set.intersection(*values)
    return frozenset(union)


def matches(selection: NodeSelection, name: str, labels: Mapping[str, str]) -> bool:
    """Reference (per node) evaluation; ``LabelIndex`` is the vectorized one."""
    if any(labels.get(k) != v for k, v in selection.selector):
        return False
    if selection.terms is None:
        return True
    return any(term and all(_expression(e, name, labels) for e in term)
               for term in selection.terms)


def _expression(expression: Expression, name: str, labels: Mapping[str, str]) -> bool:
    key, op, values = expression
    value: str | None = name if key == FIELD_NAME else labels.get(key)
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


class LabelIndex:
    """The labels of the GPU nodes of one node map, as value -> positions, for vectorized
    selection: ``In`` is an OR of value rows, ``Exists`` the key row; masks are (n_nodes,)
    bool over the GPU nodes."""

    def __init__(self, nodes: Mapping[str, NodeInfo], catalog: Catalog) -> None:
        self._infos = [info for info in nodes.values() if info.gpus]
        self.n = len(self._infos)
        self.names = {info.name: i for i, info in enumerate(self._infos)}
        self.labels = [info.labels for info in self._infos]
        # Built per key on first use: a selection reads a few keys of the ~30 a node has, so
        # indexing only those keeps a node change cheap at thousands of nodes.
        self._values: dict[str, dict[str, list[int]]] = {}
        self._n_types = len(catalog) + 1

    def reach(self, admitted: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """(n_types + 1,) bool: the GPU types carried by the admitted nodes."""
        out = np.zeros(self._n_types, dtype=bool)
        infos = self._infos
        out[list({g.type_index for i in np.flatnonzero(admitted).tolist()
                  for g in infos[i].gpus})] = True
        return out

    def partition(self, position: int) -> str | None:
        """The one MIG profile all GPUs of the node at ``position`` are partitioned into."""
        return _single_profile(self._infos[position])

    def _by_value(self, key: str) -> dict[str, list[int]]:
        found = self._values.get(key)
        if found is None:
            found = {}
            for i, labels in enumerate(self.labels):
                value = labels.get(key)
                if value is not None:
                    found.setdefault(value, []).append(i)
            self._values[key] = found
        return found

    def _mask(self, positions: list[int]) -> npt.NDArray[np.bool_]:
        out = np.zeros(self.n, dtype=bool)
        out[positions] = True
        return out

    def _has(self, key: str, values: tuple[str, ...]) -> npt.NDArray[np.bool_]:
        if key == FIELD_NAME:
            return self._mask([self.names[v] for v in values if v in self.names])
        by_value = self._by_value(key)
        return self._mask([p for v in values for p in by_value.get(v, ())])

    def _exists(self, key: str) -> npt.NDArray[np.bool_]:
        if key == FIELD_NAME:
            return np.ones(self.n, dtype=bool)
        return self._mask([p for ps in self._by_value(key).values() for p in ps])

    def select(self, selection: NodeSelection) -> npt.NDArray[np.bool_]:
        """(n_nodes,) bool: the GPU nodes the selection admits."""
        mask = np.ones(self.n, dtype=bool)
        for key, value in selection.selector:
            mask &= self._has(key, (value,))
        if selection.terms is None:
            return mask
        any_term = np.zeros(self.n, dtype=bool)
        for term in selection.terms:
            if not term:
                continue
            term_mask = np.ones(self.n, dtype=bool)
            for key, op, values in term:
                if op == "In":
                    term_mask &= self._has(key, values)
                elif op == "NotIn":
                    term_mask &= ~self._has(key, values)
                elif op == "Exists":
                    term_mask &= self._exists(key)
                elif op == "DoesNotExist":
                    term_mask &= ~self._exists(key)
                else:  # Gt / Lt: rare, evaluated per node of the key
                    term_mask &= self._mask([
                        i for ps in self._by_value(key).values() for i in ps
                        if _expression((key, op, values), "", self.labels[i])])
            any_term |= term_mask
        return mask & any_term


def _single_profile(info: NodeInfo) -> str | None:
    profiles = {p for g in info.gpus if g.mig is not None and not g.mig.dynamic
                for p, _ in g.mig.instances}
    partitioned = all(g.mig is not None and not g.mig.dynamic and g.mig.instances
                      for g in info.gpus)
    return next(iter(profiles)) if partitioned and len(profiles) == 1 else None


@dataclass(frozen=True)
class SelectionTypes:
    types: frozenset[int]
    rule: str
    """Which rule typed the pod, for explanations."""
    mig_profile: str | None = None
    """Every node the selection admits is partitioned into this one profile (an AKS or GKE
    MIG pool selected by its pool label): ``nvidia.com/gpu`` there is one instance of it."""


class SelectionTyping:
    """Types an untyped pod by its required node selection: when every GPU node the selection
    admits carries only protected types, the pod asked for those types (a GKE partition or
    sharing-strategy selector, a ``cloud.google.com/gke-nodepool`` or instance-type selector on
    an A100 pool). A selection that admits an unprotected node, or no GPU node, types nothing.
    """

    def __init__(self, catalog: Catalog, protected: npt.NDArray[np.bool_], *,
                 cache_size: int = 1024) -> None:
        self._catalog = catalog
        self._protected = protected
        self._lock = threading.Lock()
        self._nodes: Mapping[str, NodeInfo] | None = None
        self._index: LabelIndex | None = None
        self._cache: OrderedDict[NodeSelection, SelectionTypes | None] = OrderedDict()
        self._cache_size = cache_size

    def types_of(self, selection: NodeSelection,
                 nodes: Mapping[str, NodeInfo]) -> SelectionTypes | None:
        with self._lock:
            if nodes is not self._nodes:
                # A snapshot's node map is never mutated once a snapshot holds it, so identity
                # is its version; keeping the reference keeps the id from being reused.
                self._nodes, self._index = nodes, LabelIndex(nodes, self._catalog)
                self._cache.clear()
            if selection in self._cache:
                self._cache.move_to_end(selection)
                return self._cache[selection]
            index = self._index
        assert index is not None
        admitted = index.select(selection)
        reach = index.reach(admitted)
        reach[self._catalog.unknown_index] = False
        result = None
        if reach.any() and not (reach & ~self._protected).any():
            types = frozenset(int(t) for t in np.flatnonzero(reach))
            profiles = {index.partition(i) for i in np.flatnonzero(admitted).tolist()}
            profile = next(iter(profiles)) if len(profiles) == 1 else None
            where = f" partitioned {profile}" if profile else ""
            result = SelectionTypes(types, f"{selection.describe()} admits only "
                                           f"{self._catalog.describe(types)}{where} GPU nodes",
                                    profile)
        with self._lock:
            if nodes is self._nodes:
                self._cache[selection] = result
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return result
