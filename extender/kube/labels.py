"""Which node labels name a GPU type, and how their values map onto catalog types.

Built once from the platform config: custom mappings first (the platform team's own labels),
then the presets in the order the config lists them, then - for a node with no type label at
all - the cloud instance-type table (``node.kubernetes.io/instance-type``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from extender.catalog import Catalog, normalize_name
from extender.config.presets import (
    FLYTE,
    INSTANCE_TYPE_KEYS,
    PRESETS,
    LabelPreset,
    clean_gfd_product,
    gfd_mig_profile,
)
from extender.config.types import NodeLabelConfig


@dataclass(frozen=True)
class NodeTypeLabel:
    """What a node's labels say about its GPUs."""

    type_index: int | None
    """Catalog index; ``None`` when no type label is present."""
    raw_name: str
    """The label value as written (for messages)."""
    key: str
    preset: LabelPreset | None
    instance_count: int | None = None
    """Physical GPUs per node from the instance-type table (``None``: not in it)."""


class LabelMapper:
    def __init__(self, config: NodeLabelConfig, catalog: Catalog) -> None:
        self._catalog = catalog
        self._custom = {m.key: dict(m.values) for m in config.custom}
        flyte = replace(FLYTE, type_key=config.flyte.device_key,
                        partition_key=config.flyte.partition_key)
        self.presets: tuple[LabelPreset, ...] = tuple(
            flyte if name == "flyte" else PRESETS[name] for name in config.presets)
        self._gfd_key = PRESETS["gfd"].type_key
        self.type_label_keys: tuple[str, ...] = (
            *self._custom,
            *(p.type_key for p in self.presets if p.type_key not in self._custom),
        )
        self.partition_keys: tuple[str, ...] = tuple(
            p.partition_key for p in self.presets if p.partition_key is not None)
        """Label keys whose value is the MIG profile of a partitioned node (GKE, Flyte)."""
        self._instance_types: dict[str, tuple[int, int]] = {}
        for name, entry in config.instance_types.items():
            index = catalog.resolve_node_type(entry.type_name)
            if index is not None:
                self._instance_types[normalize_name(name)] = (index, entry.count)

    def custom_values(self, key: str) -> tuple[str, ...] | None:
        """The values a ``nodeLabels.custom`` entry maps for ``key`` (``None``: not custom)."""
        mapping = self._custom.get(key)
        return None if mapping is None else tuple(mapping)

    def resolve_value(self, key: str, value: str) -> frozenset[int] | None:
        """Types a pod means by requiring ``key=value`` (``None``: the value is unknown)."""
        mapping = self._custom.get(key)
        if mapping:
            name = mapping.get(value)
            return None if name is None else self._catalog.resolve(name)
        if key == self._gfd_key:
            value = clean_gfd_product(value)
        return self._catalog.resolve(value)

    def partition_value(self, key: str, value: str) -> str | None:
        """The MIG profile a pod pins by requiring ``key=value``: a partition label's value,
        or the ``-MIG-<profile>`` suffix of a GFD single-strategy product."""
        if key in self.partition_keys:
            return value
        if key == self._gfd_key:
            return gfd_mig_profile(value)
        return None

    def instance_gpus(self, labels: Mapping[str, str]) -> tuple[int, int, str] | None:
        """(type index, GPUs per node, instance type) from the instance-type table."""
        for key in INSTANCE_TYPE_KEYS:
            value = labels.get(key)
            if value is not None:
                found = self._instance_types.get(normalize_name(value))
                if found is not None:
                    return found[0], found[1], value
        return None

    def node_type(self, labels: Mapping[str, str]) -> NodeTypeLabel:
        """The node's GPU type from the first type label present (custom, then presets), else
        from its instance type."""
        instance = self.instance_gpus(labels)
        count = instance[1] if instance else None
        for key in self.type_label_keys:
            value = labels.get(key)
            if value is None:
                continue
            preset = next((p for p in self.presets if p.type_key == key), None)
            memory = _int_label(labels, preset.memory_key) if preset else None
            if preset is PRESETS["gfd"] and gfd_mig_profile(value):
                memory = None  # single strategy: gpu.memory is one MIG device's
            mapping = self._custom.get(key)
            if mapping:
                name = mapping.get(value)
                index = None if name is None else self._catalog.resolve_node_type(name, memory)
            else:
                name = clean_gfd_product(value) if key == self._gfd_key else value
                index = self._catalog.resolve_node_type(name, memory)
            if index is None and instance is not None:
                # an unknown label value on a known machine type: the table knows the GPU
                return NodeTypeLabel(instance[0], instance[2], INSTANCE_TYPE_KEYS[0], None, count)
            return NodeTypeLabel(index if index is not None else self._catalog.unknown_index,
                                 value, key, preset, count)
        if instance is not None:
            return NodeTypeLabel(instance[0], instance[2], INSTANCE_TYPE_KEYS[0], None, count)
        return NodeTypeLabel(None, "", "", None)


def _int_label(labels: Mapping[str, str], key: str | None) -> int | None:
    if key is None:
        return None
    try:
        return int(labels[key])
    except (KeyError, ValueError):
        return None
