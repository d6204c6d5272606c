"""Validation of the defaulted ``scoreCut:`` tree: every problem with its field path, the value
and what is accepted."""

from __future__ import annotations

from extender.config.admission.validation import Checks
from extender.config.score_cut.types import SET_DEPENDENT_PLUGINS

SCORE_CUT_KEYS = ("enabled", "extenderWeight", "inTreeScoreMax", "nodeLocalScoreMax",
                  "setDependentWeights")
MAX_EXTENDER_WEIGHT = 1_000_000
MAX_PLUGIN_WEIGHT = 1_000_000
MAX_IN_TREE_SCORE = 100 * 1_000_000


def validate_score_cut(errors: Checks, section: object) -> None:
    path = "scoreCut"
    if not errors.mapping(path, section):
        return
    assert isinstance(section, dict)
    errors.unknown_keys(path, section, SCORE_CUT_KEYS)
    errors.boolean(f"{path}.enabled", section.get("enabled"))
    errors.integer(f"{path}.extenderWeight", section.get("extenderWeight"), minimum=1,
                   maximum=MAX_EXTENDER_WEIGHT)
    total = section.get("inTreeScoreMax")
    local = section.get("nodeLocalScoreMax")
    parts_valid = errors.integer(f"{path}.inTreeScoreMax", total, minimum=0,
                                 maximum=MAX_IN_TREE_SCORE)
    parts_valid &= errors.integer(f"{path}.nodeLocalScoreMax", local, minimum=0,
                                  maximum=MAX_IN_TREE_SCORE)
    weights = section.get("setDependentWeights")
    where = f"{path}.setDependentWeights"
    if not errors.mapping(where, weights):
        return
    assert isinstance(weights, dict)
    errors.unknown_keys(where, weights, SET_DEPENDENT_PLUGINS)
    for plugin in SET_DEPENDENT_PLUGINS:
        parts_valid &= errors.integer(f"{where}.{plugin}", weights.get(plugin), minimum=0,
                                      maximum=MAX_PLUGIN_WEIGHT)
    if not parts_valid:
        return
    assert isinstance(total, int) and isinstance(local, int)
    summed = sum(int(weights[plugin]) for plugin in SET_DEPENDENT_PLUGINS)
    if total != local + 100 * summed:
        errors.add(f"{path}.inTreeScoreMax", (
            f"{total} is not nodeLocalScoreMax + 100 x the sum of setDependentWeights "
            f"({local} + 100 x {summed} = {local + 100 * summed}): give the profile's score "
            "plugin weights in all three (docs/score-cut.md)"))
