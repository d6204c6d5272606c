"""The ``admission:`` section of the platform config: what the admission webhook refuses, warns
about and writes into pods. Types, defaults, validation and building are kept apart, as for the
rest of the config."""

from extender.config.admission.build import build_admission
from extender.config.admission.defaults import apply_admission_defaults
from extender.config.admission.types import (
    AdmissionConfig,
    GpuTypeMapping,
    PartitionConfig,
    PlatformMappingConfig,
    SchedulerNameConfig,
    VisibleDevicesConfig,
)
from extender.config.admission.validation import validate_admission

__all__ = [
    "AdmissionConfig",
    "GpuTypeMapping",
    "PartitionConfig",
    "PlatformMappingConfig",
    "SchedulerNameConfig",
    "VisibleDevicesConfig",
    "apply_admission_defaults",
    "build_admission",
    "validate_admission",
]
