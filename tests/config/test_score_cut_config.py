"""The ``scoreCut:`` section: defaults, a full section, every error with its field path."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.config import load_config_text
from extender.config.score_cut import ScoreCutConfig
from extender.errors import ConfigError

P = pytest.param


def test_defaults_are_the_shipped_scheduler_configs() -> None:
    # weight 100 (scheduler-config/*.yaml); 100 x (3+2+1+2+2+1+1+1+2) = 1,500
    assert load_config_text("").score_cut == ScoreCutConfig(True, 100, 1500)


def test_a_full_section_builds() -> None:
    config = load_config_text(yaml.safe_dump({"scoreCut": {
        "enabled": False, "extenderWeight": 5, "inTreeScoreMax": 1300}})).score_cut
    assert config == ScoreCutConfig(enabled=False, extender_weight=5, in_tree_score_max=1300)


@pytest.mark.parametrize(("section", "expected"), [
    P({"bogus": 1}, ["scoreCut.bogus: unknown field; accepted: enabled, extenderWeight, "
                     "inTreeScoreMax"], id="unknown key"),
    P({"enabled": "yes"}, ["scoreCut.enabled: must be true or false"], id="enabled"),
    P({"extenderWeight": 0}, ["scoreCut.extenderWeight: must be 1..1000000, got 0"],
      id="weight"),
    P({"inTreeScoreMax": -1}, ["scoreCut.inTreeScoreMax: must be 0..100000000, got -1"],
      id="in-tree maximum"),
    P({"inTreeScoreMax": 1.5}, ["scoreCut.inTreeScoreMax: must be an integer, got 1.5"],
      id="in-tree maximum not an integer"),
    P([], ["scoreCut: must be a mapping"], id="not a mapping"),
])
def test_errors(section: Any, expected: list[str]) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config_text(yaml.safe_dump({"scoreCut": section}))
    errors = [str(e) for e in raised.value.errors]
    assert len(errors) == len(expected), errors
    for error, start in zip(errors, expected, strict=True):
        assert error.startswith(start), error
