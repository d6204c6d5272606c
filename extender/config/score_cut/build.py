"""Defaulted, validated raw ``scoreCut:`` tree -> typed ``ScoreCutConfig``."""

from __future__ import annotations

from typing import Any

from extender.config.score_cut.types import SET_DEPENDENT_PLUGINS, ScoreCutConfig


def build_score_cut(raw: dict[str, Any]) -> ScoreCutConfig:
    weights = raw["setDependentWeights"]
    return ScoreCutConfig(enabled=bool(raw["enabled"]),
                          extender_weight=int(raw["extenderWeight"]),
                          in_tree_score_max=int(raw["inTreeScoreMax"]),
                          node_local_score_max=int(raw["nodeLocalScoreMax"]),
                          set_dependent_weights=tuple(
                              (plugin, int(weights[plugin])) for plugin in SET_DEPENDENT_PLUGINS))
