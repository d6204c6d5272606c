"""Moved: ``extender.core.fragmentation.{model,scorer}`` and ``extender.core.rowops``. These
names stay importable from here for branches written before the split; new code imports the
new modules (remove this file once no branch in flight imports ``extender.core.frag``)."""

from extender.core.fragmentation.model import FragModel, GpuState, gpu_state
from extender.core.fragmentation.scorer import (
           FragScorer,
           first_of_kind,
           share_after_at,
           sigmoid,
           unit_pairs,
)
from extender.core.rowops import group_starts, row_sum

__all__ = ["FragModel", "FragScorer", "GpuState", "first_of_kind", "gpu_state", "group_starts",
           "row_sum", "share_after_at", "sigmoid", "unit_pairs"]
