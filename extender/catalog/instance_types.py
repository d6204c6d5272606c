"""The shipped instance-type table (``instance_types.yaml``): cloud machine type -> GPU type
and count, for nodes known only by ``node.kubernetes.io/instance-type``."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

INSTANCE_TYPES_VERSION = 1


@dataclass(frozen=True)
class InstanceGpus:
    """The GPUs one instance type carries."""

    type_name: str
    """A catalog name (id, family or alias)."""
    count: int
    """Physical GPUs per node."""


def shipped_instance_types() -> dict[str, dict[str, Any]]:
    """The shipped table as raw entries (name -> ``{type, count}``), version-checked."""
    text = resources.files("extender.catalog").joinpath("instance_types.yaml").read_text()
    data = yaml.safe_load(text)
    if data.get("version") != INSTANCE_TYPES_VERSION:
        raise ValueError(f"instance_types.yaml: version {data.get('version')!r}, this build "
                         f"reads version {INSTANCE_TYPES_VERSION}")
    return {str(name): dict(entry) for name, entry in data["instanceTypes"].items()}
