"""The ``scoreCut:`` section as a frozen typed object (YAML camelCase)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

SET_DEPENDENT_PLUGINS = ("TaintToleration", "NodeAffinity", "PodTopologySpread",
                         "InterPodAffinity", "DynamicResources")
"""kube-scheduler's score plugins that normalise over the nodes passed (``kube/score_inert.py``
says, per pod, which of them score at all)."""
DEFAULT_SET_DEPENDENT_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("TaintToleration", 3), ("NodeAffinity", 2), ("PodTopologySpread", 2),
    ("InterPodAffinity", 2), ("DynamicResources", 2))
"""Their weights in kube-scheduler 1.36.3's default profile (``apis/config/v1/
default_plugins.go``)."""
DEFAULT_NODE_LOCAL_SCORE_MAX = 400
"""100 x the default profile's plugins that score each node alone: NodeResourcesFit,
NodeResourcesBalancedAllocation, ImageLocality and VolumeBinding, weight 1 each."""
DEFAULT_PROFILE_IN_TREE_MAX = DEFAULT_NODE_LOCAL_SCORE_MAX + 100 * sum(
    weight for _, weight in DEFAULT_SET_DEPENDENT_WEIGHTS)
"""1,500: 100 x the default profile's score plugin weights (TaintToleration 3, NodeAffinity 2,
NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2, BalancedAllocation 1,
ImageLocality 1, VolumeBinding 1, DynamicResources 2)."""


@dataclass(frozen=True)
class ScoreCutConfig:
    enabled: bool = True
    """Filter leaves out the nodes that can never win (``docs/score-cut.md``)."""
    extender_weight: int = 100
    """The extender's ``weight`` in the scheduler configuration (one point = weight x 10)."""
    in_tree_score_max: int = DEFAULT_PROFILE_IN_TREE_MAX
    """The most the profile's in-tree score plugins add to one node: 100 x the sum of the
    enabled score plugins' weights (= ``node_local_score_max`` + 100 x the set-dependent
    weights, checked at load)."""
    node_local_score_max: int = DEFAULT_NODE_LOCAL_SCORE_MAX
    """100 x the weights of the profile's score plugins that score each node alone."""
    set_dependent_weights: tuple[tuple[str, int], ...] = DEFAULT_SET_DEPENDENT_WEIGHTS
    """(plugin, weight) of each of ``SET_DEPENDENT_PLUGINS`` in the profile (0: disabled)."""

    def in_tree_spread(self, scoring: Collection[str]) -> int:
        """The most the in-tree plugins can set two feasible nodes apart for a pod whose
        set-dependent plugins ``scoring`` score (every other one gives each node the same
        score, and a constant changes no order): each plugin adds 0..100 x its weight."""
        weights = dict(self.set_dependent_weights)
        return self.node_local_score_max + 100 * sum(weights.get(p, 0) for p in scoring)
