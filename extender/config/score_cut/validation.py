"""Validation of the defaulted ``scoreCut:`` tree: every problem with its field path, the value
and what is accepted."""

from __future__ import annotations

from extender.config.admission.validation import Checks

SCORE_CUT_KEYS = ("enabled", "extenderWeight", "inTreeScoreMax")
MAX_EXTENDER_WEIGHT = 1_000_000
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
    errors.integer(f"{path}.inTreeScoreMax", section.get("inTreeScoreMax"), minimum=0,
                   maximum=MAX_IN_TREE_SCORE)
