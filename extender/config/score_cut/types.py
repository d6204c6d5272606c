"""The ``scoreCut:`` section as a frozen typed object (YAML camelCase)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PROFILE_IN_TREE_MAX = 1500
"""kube-scheduler 1.36.3's default profile: 100 x the score plugins' weights (TaintToleration 3,
NodeAffinity 2, NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2,
BalancedAllocation 1, ImageLocality 1, VolumeBinding 1, DynamicResources 2:
``apis/config/v1/default_plugins.go``)."""


@dataclass(frozen=True)
class ScoreCutConfig:
    enabled: bool = True
    """Filter leaves out the nodes that can never win (only for pods and clusters where every
    set-dependent score plugin is inert: ``kube/score_inert.py``)."""
    extender_weight: int = 100
    """The extender's ``weight`` in the scheduler configuration (one point = weight x 10)."""
    in_tree_score_max: int = DEFAULT_PROFILE_IN_TREE_MAX
    """The most the profile's in-tree score plugins add to one node: 100 x the sum of the
    enabled score plugins' weights."""
