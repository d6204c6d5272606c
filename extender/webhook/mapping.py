"""The platform mapping: which node labels, partition expressions and tolerations the GPU types
a pod accepts stand for on this platform.

A type's selectors come from ``admission.platformMapping.gpuTypes`` when it names a
``nodeSelector`` (Flyte's ``gpu_types`` shape), else from the ``typeLabel`` convention: every
spelling of the type in that ecosystem's style that the extender itself reads, on that label,
as this type (possibly among others). The affinity we write is therefore never narrower than
what the extender accepts. It may be wider where a label value names several types and the
platform has no memory label to tell them apart (AKS says ``A100`` for both sizes): the
extender then decides.

Every value written is one the API server takes as a label value (``presets.is_label_value``):
a name no node label can hold (Flyte's SDK string ``RTX PRO 6000``, a GFD product grown past
63 characters by its ``-MIG-<profile>`` suffix) is left out, and a type left with no value is
``unmapped`` (no type affinity; the webhook says why in a warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from extender.config.admission import PlatformMappingConfig
from extender.config.presets import GFD, PRESETS, LabelPreset, is_label_value
from extender.model import GpuRequest, RequestKind
from extender.platform import Platform

Expression = Mapping[str, Any]
"""A ``NodeSelectorRequirement``: ``{"key", "operator", "values"?}``."""
Selector = tuple[tuple[str, str], ...]
"""Label key/value pairs a node must carry, sorted."""


@dataclass(frozen=True)
class PodMapping:
    """What the mapping asks of one pod."""

    groups: tuple[tuple[Expression, ...], ...]
    """Alternatives (OR-ed); each is a list of expressions ANDed into a nodeSelectorTerm.
    Empty: no node affinity to write."""
    tolerations: tuple[Mapping[str, Any], ...]
    unmapped: tuple[str, ...] = ()
    """Accepted types without a selector (then no type affinity is written at all)."""
    skipped: tuple[str, ...] = ()
    """Spellings of the accepted types left out because no label value can hold them."""


def _spellings(preset: LabelPreset | None, names: list[str], family: str) -> list[str]:
    """A type's names as the ecosystem writes them in its type label."""
    if preset is None:
        return names
    if preset.name == "gfd":   # product names: NVIDIA-A100-SXM4-80GB, Tesla-T4
        # GFD turns the NVML name's spaces into '-' (k8s-device-plugin internal/lm): a name
        # with a space is another ecosystem's (Flyte's "A100 80G"), never a product label
        return [n for n in names if any(c.isupper() for c in n) and " " not in n]
    if preset.name == "gke":   # nvidia-tesla-t4, nvidia-a100-80gb
        return [n for n in names if n.startswith("nvidia-") and n == n.lower()]
    if preset.name == "eks-karpenter":  # instance-gpu-name: a100, t4, a10g
        return [family.lower()]
    if preset.name == "aks":   # sku-gpu-name: A100, T4
        return [family.upper()]
    return names


class PlatformMapping:
    """Built once per platform; ``for_request`` is cached per distinct request shape."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        config: PlatformMappingConfig = platform.config.admission.platform_mapping
        self._config = config
        catalog = platform.catalog
        self._preset = PRESETS.get(config.type_label or "")
        self.type_key: str | None = self._preset.type_key if self._preset else config.type_label
        partition = config.partitions
        self.partition_key: str | None = None
        if partition.enabled:
            self.partition_key = partition.label or (
                self._preset.partition_key if self._preset else None)
        self._custom = {m.key: dict(m.values) for m in platform.config.node_labels.custom}
        self._explicit: dict[int, list[Selector]] = {}
        self._tolerations: dict[int, list[Mapping[str, Any]]] = {}
        for entry in config.gpu_types:
            for t in sorted(catalog.resolve(entry.name) or ()):
                if entry.node_selector:
                    self._explicit.setdefault(t, []).append(
                        tuple(sorted(entry.node_selector.items())))
                self._tolerations.setdefault(t, []).extend(entry.tolerations)
        self.for_request = lru_cache(maxsize=4096)(self._for_request)

    # -- selectors -------------------------------------------------------------------------

    def _derived(self, t: int, accepted: frozenset[int], suffixes: tuple[str, ...]
                 ) -> tuple[list[Selector], list[str]]:
        """The type's selectors on the type label, and the spellings left out because no
        label value can hold them."""
        key = self.type_key
        if key is None:
            return [], []
        accel = self._platform.catalog.types[t]
        labels = self._platform.labels
        memory_key = self._preset.memory_key if self._preset else None
        # a custom mapping's label values, else every name of the type
        names = list(self._custom.get(key) or ()) or [accel.id, accel.family, *accel.aliases]
        values: list[tuple[str, frozenset[int]]] = []
        skipped: list[str] = []
        for name in _spellings(self._preset, names, accel.family):
            variants = [name + s for s in suffixes] if self._preset is GFD else [name]
            for value in variants:
                if not is_label_value(value):
                    skipped.append(value)
                    continue
                meant = labels.resolve_value(key, value) or frozenset()
                if t in meant and value not in (v for v, _ in values):
                    values.append((value, meant))
        out: list[Selector] = []
        for value, meant in values:
            # A value that also means other types is never narrower than the extender; where
            # the preset has a memory label it tells the sizes apart, as the extender does.
            if meant <= accepted or memory_key is None:
                out.append(((key, value),))
            else:  # Karpenter's `a100` is both sizes: the memory label tells them apart
                out.append(tuple(sorted({key: value, memory_key: str(accel.memory_mib)}
                                        .items())))
        return out, skipped

    def _for_request(self, request: GpuRequest) -> PodMapping:
        if not self._config.enabled:
            return PodMapping((), ())
        catalog = self._platform.catalog
        partition = self._partition_expressions(request)
        if request.types is None:
            return PodMapping((partition,) if partition else (), ())
        accepted = frozenset(request.types - request.excluded)
        suffixes = ("", "-SHARED") if request.kind is not RequestKind.MIG else \
            ("", f"-MIG-{request.mig_profile}")
        selectors: list[Selector] = []
        unmapped: list[str] = []
        skipped: list[str] = []
        tolerations: list[Mapping[str, Any]] = []
        for t in sorted(accepted):
            found = self._explicit.get(t)
            if not found:
                found, left_out = self._derived(t, accepted, suffixes)
                skipped += left_out
            if not found:
                unmapped.append(catalog.id_of(t))
            for selector in found:
                if selector not in selectors:
                    selectors.append(selector)
            for toleration in self._tolerations.get(t, ()):
                if toleration not in tolerations:
                    tolerations.append(toleration)
        if partition and request.kind is RequestKind.MIG and self._config.partitions.tolerate:
            assert self.partition_key is not None
            tolerations.append({"key": self.partition_key, "operator": "Equal",
                                "value": request.mig_profile, "effect": "NoSchedule"})
        groups = () if unmapped or not selectors else _group(selectors)
        groups = tuple(g + partition for g in groups) if groups else \
            ((partition,) if partition else ())
        return PodMapping(groups, tuple(tolerations), tuple(unmapped), tuple(skipped))

    def _partition_expressions(self, request: GpuRequest) -> tuple[Expression, ...]:
        key = self.partition_key
        if key is None:
            return ()
        if request.kind is RequestKind.MIG:
            return ({"key": key, "operator": "In", "values": [request.mig_profile]},)
        if request.kind is RequestKind.WHOLE:
            return ({"key": key, "operator": "DoesNotExist"},)
        return ()


def _group(selectors: list[Selector]) -> tuple[tuple[Expression, ...], ...]:
    """Fewest alternatives: selectors that differ only in one key's value become one ``In``.

    ``[(gke=a),(gke=b)]`` -> one group ``gke In [a, b]``; Karpenter's
    ``[(name=a100, mem=81920), (name=h100, mem=81920)]`` -> ``name In [a100, h100], mem In
    [81920]`` (the same pairs exactly, since the other labels are equal).
    """
    merged: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
    for selector in selectors:
        key, value = selector[0] if len(selector) == 1 else _type_pair(selector)
        rest = tuple(p for p in selector if p != (key, value))
        values = merged.setdefault((key, rest), [])
        if value not in values:
            values.append(value)
    groups = []
    for (key, rest), values in merged.items():
        expressions: list[Expression] = [{"key": key, "operator": "In", "values": values}]
        expressions += [{"key": k, "operator": "In", "values": [v]} for k, v in rest]
        groups.append(tuple(expressions))
    return tuple(groups)


def _type_pair(selector: Selector) -> tuple[str, str]:
    """The pair that names the type in a multi-label selector: the first that is not a memory
    label (Karpenter's name + memory), else the first."""
    memory_keys = {p.memory_key for p in PRESETS.values() if p.memory_key}
    for pair in selector:
        if pair[0] not in memory_keys:
            return pair
    return selector[0]
