"""The ``demand:`` section of the platform config: what ``gpu-extender demand`` (the autoscaler
bridge) writes for pods that fit nowhere, and when. Types, defaults, validation and building
are kept apart, as for ``admission:``."""

from extender.config.demand.build import build_demand
from extender.config.demand.defaults import apply_demand_defaults
from extender.config.demand.types import DemandConfig, DemandMode, ProvisioningClass
from extender.config.demand.validation import validate_demand

__all__ = [
    "DemandConfig",
    "DemandMode",
    "ProvisioningClass",
    "apply_demand_defaults",
    "build_demand",
    "validate_demand",
]
