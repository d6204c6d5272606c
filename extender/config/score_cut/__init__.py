"""The ``scoreCut:`` section of the platform config: the exact cut (filter answers only the
nodes that can still win kube-scheduler's choice, docs/score-cut.md). Types, defaults,
validation and building are kept apart, as for ``demand:``."""

from extender.config.score_cut.build import build_score_cut
from extender.config.score_cut.defaults import apply_score_cut_defaults
from extender.config.score_cut.types import ScoreCutConfig
from extender.config.score_cut.validation import validate_score_cut

__all__ = ["ScoreCutConfig", "apply_score_cut_defaults", "build_score_cut", "validate_score_cut"]
