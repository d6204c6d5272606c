"""Defaulted, validated raw ``scoreCut:`` tree -> typed ``ScoreCutConfig``."""

from __future__ import annotations

from typing import Any

from extender.config.score_cut.types import ScoreCutConfig


def build_score_cut(raw: dict[str, Any]) -> ScoreCutConfig:
    return ScoreCutConfig(enabled=bool(raw["enabled"]),
                          extender_weight=int(raw["extenderWeight"]),
                          in_tree_score_max=int(raw["inTreeScoreMax"]))
