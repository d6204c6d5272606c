"""Platform config: typed objects, defaults, validation with field paths, YAML loading."""

from extender.config.loader import load_config, load_config_text
from extender.config.types import (
    LabelMapping,
    NodeLabelConfig,
    PlatformConfig,
    ProtectionConfig,
    ScoringConfig,
    ServiceConfig,
)

__all__ = [
    "LabelMapping",
    "NodeLabelConfig",
    "PlatformConfig",
    "ProtectionConfig",
    "ScoringConfig",
    "ServiceConfig",
    "load_config",
    "load_config_text",
]
