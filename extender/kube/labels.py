"""Which node labels name a GPU type, and how their values map onto catalog types.

Built once from the platform config: custom mappings first (the platform team's own labels),
then the presets in the order the config lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.catalog import Catalog
from extender.config.presets import PRESETS, LabelPreset, clean_gfd_product
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


class LabelMapper:
    def __init__(self, config: NodeLabelConfig, catalog: Catalog) -> None:
        self._catalog = catalog
        self._custom = {m.key: dict(m.values) for m in config.custom}
        self.presets: tuple[LabelPreset, ...] = tuple(PRESETS[name] for name in config.presets)
        self.type_label_keys: tuple[str, ...] = (
            *self._custom,
            *(p.type_key for p in self.presets if p.type_key not in self._custom),
        )

    def resolve_value(self, key: str, value: str) -> frozenset[int] | None:
        """Types a pod means by requiring ``key=value`` (``None``: the value is unknown)."""
        mapping = self._custom.get(key)
        if mapping:
            name = mapping.get(value)
            return None if name is None else self._catalog.resolve(name)
        if key == PRESETS["gfd"].type_key:
            value = clean_gfd_product(value)
        return self._catalog.resolve(value)

    def node_type(self, labels: Mapping[str, str]) -> NodeTypeLabel:
        """The node's GPU type from the first type label present (custom, then presets)."""
        for key in self.type_label_keys:
            value = labels.get(key)
            if value is None:
                continue
            preset = next((p for p in self.presets if p.type_key == key), None)
            memory = _int_label(labels, preset.memory_key) if preset else None
            mapping = self._custom.get(key)
            if mapping:
                name = mapping.get(value)
                index = None if name is None else self._catalog.resolve_node_type(name, memory)
            else:
                name = clean_gfd_product(value) if preset is PRESETS["gfd"] else value
                index = self._catalog.resolve_node_type(name, memory)
            return NodeTypeLabel(index if index is not None else self._catalog.unknown_index,
                                 value, key, preset)
        return NodeTypeLabel(None, "", "", None)


def _int_label(labels: Mapping[str, str], key: str | None) -> int | None:
    if key is None:
        return None
    try:
        return int(labels[key])
    except (KeyError, ValueError):
        return None
