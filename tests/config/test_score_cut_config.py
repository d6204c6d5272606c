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
    # weight 100 (scheduler-config/*.yaml); 100 x (3+2+1+2+2+1+1+1+2) = 1,500, of it
    # 100 x (1+1+1+1) = 400 node-local
    config = load_config_text("").score_cut
    assert config == ScoreCutConfig(True, 100, 1500, 400, (
        ("TaintToleration", 3), ("NodeAffinity", 2), ("PodTopologySpread", 2),
        ("InterPodAffinity", 2), ("DynamicResources", 2)))


def test_a_full_section_builds() -> None:
    # a profile without TaintToleration and with PodTopologySpread at 5:
    # 400 + 100 x (0 + 2 + 5 + 2 + 2) = 1,500
    config = load_config_text(yaml.safe_dump({"scoreCut": {
        "enabled": False, "extenderWeight": 5, "inTreeScoreMax": 1500,
        "setDependentWeights": {"TaintToleration": 0, "PodTopologySpread": 5}}})).score_cut
    assert config == ScoreCutConfig(
        enabled=False, extender_weight=5, in_tree_score_max=1500, node_local_score_max=400,
        set_dependent_weights=(("TaintToleration", 0), ("NodeAffinity", 2),
                               ("PodTopologySpread", 5), ("InterPodAffinity", 2),
                               ("DynamicResources", 2)))
    assert config.in_tree_spread({"PodTopologySpread"}) == 900


def test_parts_that_add_up_load() -> None:
    # 200 + 100 x 11 = 1,300
    config = load_config_text(yaml.safe_dump({"scoreCut": {
        "nodeLocalScoreMax": 200, "inTreeScoreMax": 1300}})).score_cut
    assert config.in_tree_spread(()) == 200


@pytest.mark.parametrize(("section", "expected"), [
    P({"bogus": 1}, ["scoreCut.bogus: unknown field; accepted: enabled, extenderWeight, "
                     "inTreeScoreMax, nodeLocalScoreMax, setDependentWeights"], id="unknown key"),
    P({"inTreeScoreMax": 1300}, [
        "scoreCut.inTreeScoreMax: 1300 is not nodeLocalScoreMax + 100 x the sum of "
        "setDependentWeights (400 + 100 x 11 = 1500)"], id="the parts do not add up"),
    P({"setDependentWeights": {"Bogus": 1}}, [
        "scoreCut.setDependentWeights.Bogus: unknown field; accepted: DynamicResources, "
        "InterPodAffinity, NodeAffinity, PodTopologySpread, TaintToleration"],
      id="unknown plugin"),
    P({"setDependentWeights": {"NodeAffinity": -1}}, [
        "scoreCut.setDependentWeights.NodeAffinity: must be 0..1000000, got -1"],
      id="plugin weight"),
    P({"setDependentWeights": [1]}, ["scoreCut.setDependentWeights: must be a mapping"],
      id="weights not a mapping"),
    P({"nodeLocalScoreMax": "400"}, ["scoreCut.nodeLocalScoreMax: must be an integer"],
      id="node-local maximum"),
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
