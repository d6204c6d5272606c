"""Defaults of the ``scoreCut:`` section, applied to the raw tree before validation."""

from __future__ import annotations

from typing import Any

from extender.config.score_cut.types import ScoreCutConfig


def apply_score_cut_defaults(raw: dict[str, Any]) -> None:
    """Fill ``raw["scoreCut"]`` in place (a non-mapping is left for validation to report)."""
    section = raw.setdefault("scoreCut", {})
    if isinstance(section, dict):
        config = ScoreCutConfig()
        section.setdefault("enabled", config.enabled)
        section.setdefault("extenderWeight", config.extender_weight)
        section.setdefault("inTreeScoreMax", config.in_tree_score_max)
        section.setdefault("nodeLocalScoreMax", config.node_local_score_max)
        weights = section.setdefault("setDependentWeights", {})
        if isinstance(weights, dict):
            for plugin, weight in config.set_dependent_weights:
                weights.setdefault(plugin, weight)
