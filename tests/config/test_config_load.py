"""Loading the platform config: defaults, the shipped default.yaml, and overrides of shipped
accelerator entries."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from extender.catalog import AcceleratorType
from extender.config import PlatformConfig, load_config, load_config_text
from extender.config.defaults import DEFAULT_PRESETS, shipped_accelerators
from extender.core.scoring.base import PLACEMENTS
from extender.errors import ConfigError
from extender.platform import load_platform

P = pytest.param
DEFAULT_YAML = Path(__file__).parents[2] / "extender" / "config" / "default.yaml"


@pytest.fixture(scope="module")
def defaults() -> PlatformConfig:
    return load_config()


def by_id(config: PlatformConfig) -> dict[str, AcceleratorType]:
    return {t.id: t for t in config.accelerators}


class TestDefaults:
    def test_every_shipped_type_is_present_in_catalog_order(self, defaults: PlatformConfig
                                                            ) -> None:
        assert [t.id for t in defaults.accelerators] == [e["id"] for e in shipped_accelerators()]

    def test_the_design_types_are_shipped(self, defaults: PlatformConfig) -> None:
        assert {"t4", "l4", "a10g", "l40s", "v100-16gb", "a100-40gb", "a100-80gb", "h100-80gb",
                "h200-141gb", "b200-180gb"} <= set(by_id(defaults))

    def test_presets_are_all_five_in_priority_order(self, defaults: PlatformConfig) -> None:
        assert defaults.node_labels.presets == DEFAULT_PRESETS == (
            "gfd", "gke", "eks-karpenter", "aks", "flyte")
        assert defaults.node_labels.custom == ()

    def test_protection_follows_the_catalog_flags(self, defaults: PlatformConfig) -> None:
        assert defaults.protection.protected_types is None
        assert dict(defaults.protection.namespaces) == {}

    def test_scoring_defaults_to_cost_fragmentation(self, defaults: PlatformConfig) -> None:
        assert defaults.scoring.strategy == "cost-fragmentation"
        assert dict(defaults.scoring.weights) == {}
        assert defaults.scoring.score_ahead is True

    def test_service_defaults(self, defaults: PlatformConfig) -> None:
        assert defaults.service.reservation_ttl_seconds == 30.0
        assert defaults.service.reconcile_interval_seconds == 300.0
        assert defaults.service.check_cpu_memory is False
        assert defaults.service.placement_events is True
        assert (defaults.service.event_qps, defaults.service.event_burst) == (20.0, 30)
        assert defaults.service.gpu_series is True


def test_the_shipped_default_yaml_is_exactly_the_defaults(defaults: PlatformConfig) -> None:
    assert load_config(DEFAULT_YAML) == defaults
    assert load_config(str(DEFAULT_YAML)) == defaults


@pytest.mark.parametrize(
    "text",
    [
        P("", id="an empty file is the defaults"),
        P("# only a comment\n", id="a file with only comments is the defaults"),
        P("---\n", id="an empty YAML document is the defaults"),
        P("apiVersion: gpu-extender.io/v1alpha1\nkind: PlatformConfig\n",
          id="only apiVersion and kind is the defaults"),
        P("accelerators: []\nnodeLabels: {}\nprotection: {}\nscoring: {}\nservice: {}\n",
          id="empty sections are filled with defaults"),
    ],
)
def test_omitted_fields_take_their_defaults(text: str, defaults: PlatformConfig) -> None:
    assert load_config_text(text) == defaults


@pytest.mark.parametrize(
    ("override", "changed"),
    [
        P({"id": "v100-16gb", "price": 1.80}, {"price": 1.80},
          id="a price override changes only the price"),
        P({"id": "a100-80gb", "protected": False}, {"protected": False},
          id="unprotecting the A100-80GB keeps its MIG geometry and aliases"),
        P({"id": "t4", "aliases": ["my-t4"]}, {"aliases": ("my-t4",)},
          id="an aliases override replaces the alias list"),
        P({"id": "l4", "memoryMiB": 23034}, {"memory_mib": 23034},
          id="a memory override changes only the memory"),
        P({"id": "a100-40gb", "mig": None}, {"mig": None},
          id="mig null removes the MIG geometry of a shipped type"),
    ],
)
def test_an_override_of_a_shipped_id_changes_only_the_named_fields(
        defaults: PlatformConfig, override: dict[str, object], changed: dict[str, object]
) -> None:
    config = load_config_text(yaml.safe_dump({"accelerators": [override]}))
    type_id = str(override["id"])
    expected = dataclasses.replace(by_id(defaults)[type_id], **changed)  # type: ignore[arg-type]
    assert by_id(config)[type_id] == expected
    # nothing else moved: same ids in the same order, every other type identical
    assert [t.id for t in config.accelerators] == [t.id for t in defaults.accelerators]
    others = {k: v for k, v in by_id(config).items() if k != type_id}
    assert others == {k: v for k, v in by_id(defaults).items() if k != type_id}


def test_a_new_id_adds_a_type_after_the_shipped_ones(defaults: PlatformConfig) -> None:
    text = """
accelerators:
  - id: rtx-6000-ada
    family: rtx-6000
    memoryMiB: 49152
    price: 1.20
    protected: false
    aliases: [NVIDIA-RTX-6000-Ada-Generation]
"""
    config = load_config_text(text)
    assert config.accelerators[:-1] == defaults.accelerators
    assert config.accelerators[-1] == AcceleratorType(
        id="rtx-6000-ada", family="rtx-6000", memory_mib=49152, price=1.2, protected=False,
        aliases=("NVIDIA-RTX-6000-Ada-Generation",))


def test_every_section_is_built_into_typed_values() -> None:
    text = """
nodeLabels:
  presets: [gke]
  custom:
    - key: k8s.amazonaws.com/accelerator
      values: {nvidia-tesla-t4: t4, nvidia-a10g: a10g}
    - key: example.com/gpu
protection:
  protectedTypes: [h100, a100-80gb]
  namespaces: {research: [a100, h100], platform: ["*"]}
scoring:
  strategy: best-fit
  weights: {cost: 2, frag: 0.5}
  scoreAhead: false
service:
  reservationTTLSeconds: 5
  reconcileIntervalSeconds: 60.5
  checkCpuMemory: true
  placementEvents: false
  eventQPS: 0
  eventBurst: 10
  gpuSeries: false
"""
    config = load_config_text(text)
    assert config.node_labels.presets == ("gke",)
    assert [(m.key, dict(m.values)) for m in config.node_labels.custom] == [
        ("k8s.amazonaws.com/accelerator", {"nvidia-tesla-t4": "t4", "nvidia-a10g": "a10g"}),
        ("example.com/gpu", {}),
    ]
    assert config.protection.protected_types == ("h100", "a100-80gb")
    assert dict(config.protection.namespaces) == {"research": ("a100", "h100"),
                                                  "platform": ("*",)}
    assert config.scoring.strategy == "best-fit"
    assert dict(config.scoring.weights) == {"cost": 2.0, "frag": 0.5}
    assert isinstance(config.scoring.weights["cost"], float)
    assert config.scoring.score_ahead is False
    assert config.service.reservation_ttl_seconds == 5.0
    assert config.service.reconcile_interval_seconds == 60.5
    assert config.service.check_cpu_memory is True
    assert config.service.placement_events is False
    assert (config.service.event_qps, config.service.event_burst) == (0.0, 10)
    assert config.service.gpu_series is False


def test_config_values_are_frozen(defaults: PlatformConfig) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        defaults.scoring = defaults.scoring  # type: ignore[misc]


def test_strategy_is_checked_only_against_the_strategies_given() -> None:
    # load_config alone does not know the registry; load_platform passes it
    assert load_config_text("scoring: {strategy: my-own}").scoring.strategy == "my-own"
    with pytest.raises(ConfigError) as raised:
        load_config_text("scoring: {strategy: my-own}", strategies=("best-fit",))
    assert [e.path for e in raised.value.errors] == ["scoring.strategy"]


class TestFileProblems:
    def test_a_missing_file_says_it_cannot_be_read(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.yaml"
        with pytest.raises(ConfigError) as raised:
            load_config(missing)
        assert raised.value.source == str(missing)
        assert [(e.path, e.message) for e in raised.value.errors] == [
            ("(file)", "cannot read: No such file or directory")]

    def test_a_directory_says_it_cannot_be_read(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read: Is a directory"):
            load_config(tmp_path)

    def test_a_binary_file_says_it_is_not_text(self, tmp_path: Path) -> None:
        binary = tmp_path / "config.yaml"
        binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
        with pytest.raises(ConfigError) as raised:
            load_config(binary)
        (error,) = raised.value.errors
        assert error.path == "(file)"
        assert "not a UTF-8 text file" in error.message

    @pytest.mark.parametrize(
        "text",
        [
            P("accelerators: [\n", id="an unclosed bracket is not YAML"),
            P("a: b: c\n", id="a nested plain mapping is not YAML"),
            P("\tkey: value\n", id="a tab indent is not YAML"),
        ],
    )
    def test_text_that_is_not_yaml(self, text: str) -> None:
        with pytest.raises(ConfigError) as raised:
            load_config_text(text, source="cfg.yaml")
        (error,) = raised.value.errors
        assert error.path == "(file)"
        # where in the file, and not PyYAML's name for the stream ("<unicode string>")
        assert error.message.startswith("not valid YAML: line ")
        assert "<unicode string>" not in error.message
        assert str(raised.value).startswith("cfg.yaml is invalid (1 error(s))")

    @pytest.mark.parametrize(
        ("text", "kind"),
        [
            P("- a\n- b\n", "list", id="a YAML list is not a config"),
            P("just some words\n", "str", id="a bare string is not a config"),
            P("42\n", "int", id="a number is not a config"),
        ],
    )
    def test_yaml_that_is_not_a_mapping(self, text: str, kind: str) -> None:
        with pytest.raises(ConfigError) as raised:
            load_config_text(text)
        assert [(e.path, e.message) for e in raised.value.errors] == [
            ("(file)", f"must be a mapping, got {kind}")]


def test_the_service_refuses_a_strategy_that_needs_placements_it_does_not_feed(
        tmp_path: Path) -> None:
    # gpu-clustering scores by the classes of the pods on each node, which only the
    # simulator's replay reports; serve and check-config load through load_platform
    path = tmp_path / "clustering.yaml"
    path.write_text("scoring: {strategy: gpu-clustering}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_platform(path)
    (error,) = raised.value.errors
    assert error.path == "scoring.strategy"
    assert "'gpu-clustering' needs placements" in error.message
    assert "only the simulator feeds" in error.message
    assert "accepted here: best-fit, cheapest-first, cost-fragmentation" in error.message
    assert "gpu-clustering" not in error.message.split("accepted here: ")[1]
    platform = load_platform(path, feeds=frozenset({PLACEMENTS}))
    assert platform.strategy(feeds=frozenset({PLACEMENTS})).NAME == "gpu-clustering"
    with pytest.raises(ConfigError):
        platform.strategy()
