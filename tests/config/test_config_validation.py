"""Config validation: every rule reports the exact field path, and every problem at once."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.config import load_config_text
from extender.config.defaults import apply_defaults
from extender.config.validation import validate_config
from extender.core.scoring.registry import strategy_weights
from extender.errors import ConfigError, FieldError

P = pytest.param
STRATEGIES = strategy_weights()


def errors_of(config: dict[str, Any] | str) -> list[FieldError]:
    text = config if isinstance(config, str) else yaml.safe_dump(config)
    with pytest.raises(ConfigError) as raised:
        load_config_text(text, strategies=STRATEGIES)
    return list(raised.value.errors)


def new_type(**fields: Any) -> dict[str, Any]:
    """A valid new accelerator entry, with ``fields`` changed (``None`` removes a field)."""
    entry: dict[str, Any] = {"id": "rtx", "family": "rtx", "memoryMiB": 49152, "price": 1.2,
                             "protected": False}
    entry.update(fields)
    return {k: v for k, v in entry.items() if v is not None}


def mig_type(*profiles: dict[str, Any], slots: Any = 8, **mig: Any) -> dict[str, Any]:
    """A new MIG-capable type (80 GB) with the given profiles."""
    return new_type(id="mig-gpu", family="mig-gpu", memoryMiB=81920,
                    mig={"slots": slots, "profiles": list(profiles), **mig})


def profile(**fields: Any) -> dict[str, Any]:
    """A valid 1g.10gb profile (1 slice at 0..6), with ``fields`` changed."""
    return {"name": "1g.10gb", "memoryMiB": 9856, "slices": 1,
            "starts": [0, 1, 2, 3, 4, 5, 6], **fields}


def accel(*entries: Any) -> dict[str, Any]:
    return {"accelerators": list(entries)}


# (config, the one expected field path, a fragment of its message)
SINGLE_MISTAKES = [
    # -- top level --
    P({"colour": "blue"}, "colour", "unknown field; accepted: accelerators, admission, apiVersion",
      id="an unknown top-level key is reported by name"),
    P({"apiVersion": "v1"}, "apiVersion", "must be 'gpu-extender.io/v1alpha1', got 'v1'",
      id="a wrong apiVersion says the one accepted"),
    P({"kind": "Config"}, "kind", "must be 'PlatformConfig'", id="a wrong kind"),
    # -- accelerators --
    P({"accelerators": {"id": "t4"}}, "accelerators", "must be a list",
      id="accelerators must be a list"),
    P({"accelerators": None}, "accelerators", "must be a list, got NoneType",
      id="an empty accelerators key is not a list"),
    P(accel("t4"), "accelerators[0]", "must be a mapping, got 't4'",
      id="an accelerator entry must be a mapping"),
    P(accel({"price": 1.0}), "accelerators[0].id", "is required",
      id="an entry without an id is reported once at its id"),
    P(accel({"id": "v100-16gb", "price": -1}), "accelerators[0].price", "must be >= 0, got -1",
      id="a negative price of an overridden shipped type is reported at the user's entry"),
    P(accel({"id": "t4", "price": "cheap"}), "accelerators[0].price",
      "must be a number, got 'cheap'", id="a price must be a number"),
    P(accel({"id": "t4", "price": float("nan")}), "accelerators[0].price",
      "must be a number, got nan", id="a NaN price is not a number"),
    P(accel({"id": "t4", "price": True}), "accelerators[0].price", "must be a number, got True",
      id="a boolean price is not a number"),
    P(accel(new_type(memoryMiB=0)), "accelerators[0].memoryMiB", "must be >= 1, got 0",
      id="memory must be positive"),
    P(accel(new_type(memoryMiB=1.5)), "accelerators[0].memoryMiB", "must be an integer",
      id="memory must be an integer"),
    P(accel(new_type(protected="yes")), "accelerators[0].protected",
      "must be true or false, got 'yes'", id="protected must be a boolean"),
    P(accel(new_type(id="RTX_6000")), "accelerators[0].id", "is not a lower-case id",
      id="an id must be lower case"),
    P(accel(new_type(id="rtx-" + "6" * 60)), "accelerators[0].id",
      "is not a lower-case id ([a-z0-9.-], at most 63 characters)",
      id="an id is a label value (gpu-extender.io/accelerator): 64 characters is one too many"),
    P(accel(new_type(family="")), "accelerators[0].family", "must be a non-empty string",
      id="a family must not be empty"),
    P(accel(new_type(aliases="NVIDIA-RTX")), "accelerators[0].aliases", "must be a list",
      id="aliases must be a list"),
    P(accel(new_type(aliases=["NVIDIA-RTX", 7])), "accelerators[0].aliases[1]",
      "must be a non-empty string, got 7", id="each alias must be a string"),
    P(accel(new_type(colour="red")), "accelerators[0].colour", "unknown field",
      id="an unknown accelerator field is reported"),
    P(accel(new_type(aliases=["Tesla-T4"])), "accelerators[0].aliases[0]",
      "'Tesla-T4' already names type 't4'", id="an alias may not name another type"),
    P(accel(new_type(aliases=["tesla t4"])), "accelerators[0].aliases[0]",
      "already names type 't4'", id="alias collisions are found after normalization"),
    P(accel(new_type(), new_type(price=2.0)), "accelerators[1].id",
      "duplicate id 'rtx' (also accelerators[0])", id="a new id may be listed only once"),
    P(accel({"id": "t4", "price": 1}, {"id": "t4", "price": 2}), "accelerators[1].id",
      "duplicate id 't4'", id="a shipped id may be overridden only once"),
    P(accel(new_type(id="a100", family="my-a100")), "accelerators[0].id",
      "'a100' is also the family of 'a100-40gb'",
      id="an id may not be another type's family name"),
    # -- mig --
    P(accel(new_type(mig=[1])), "accelerators[0].mig", "must be a mapping",
      id="mig must be a mapping"),
    P(accel(mig_type(profile(), slots=9)), "accelerators[0].mig.slots", "must be 1..8, got 9",
      id="at most 8 MIG slots"),
    P(accel(mig_type(profile(), colour=1)), "accelerators[0].mig.colour", "unknown field",
      id="an unknown mig field is reported"),
    P(accel(mig_type(profile(name="1g10gb"))), "accelerators[0].mig.profiles[0].name",
      "is not a MIG profile name like 1g.10gb", id="a profile name must look like 1g.10gb"),
    P(accel(mig_type(profile(), profile())), "accelerators[0].mig.profiles[1].name",
      "duplicate profile '1g.10gb'", id="a profile may be listed once"),
    P(accel(mig_type(profile(memoryMiB=90000))), "accelerators[0].mig.profiles[0].memoryMiB",
      "90000 exceeds the GPU's memoryMiB 81920", id="a profile may not exceed the GPU memory"),
    P(accel(mig_type(profile(slices=0))), "accelerators[0].mig.profiles[0].slices",
      "must be 1..8, got 0", id="a profile spans at least one slice"),
    P(accel(mig_type(profile(starts=[]))), "accelerators[0].mig.profiles[0].starts",
      "must list at least one start slot", id="a profile needs a start"),
    P(accel(mig_type(profile(starts=[0, 8]))), "accelerators[0].mig.profiles[0].starts[1]",
      "must be 0..7, got 8", id="a start is a slot 0..7"),
    # slices 4 from start 6 needs slots 6..9 but there are 8 (0..7): 6 + 4 = 10 > 8
    P(accel(mig_type(profile(slices=4, starts=[0, 6]))),
      "accelerators[0].mig.profiles[0].starts[1]", "start 6 + 4 slices exceeds the 8 slots",
      id="an instance must end within the slots"),
    P(accel(mig_type(profile(colour=1))), "accelerators[0].mig.profiles[0].colour",
      "unknown field", id="an unknown profile field is reported"),
    P(accel(mig_type("1g.10gb")), "accelerators[0].mig.profiles[0]", "must be a mapping",
      id="a profile must be a mapping"),
    # -- nodeLabels --
    P({"nodeLabels": []}, "nodeLabels", "must be a mapping", id="nodeLabels must be a mapping"),
    P({"nodeLabels": {"presets": ["gfd", "eks"]}}, "nodeLabels.presets[1]",
      "unknown preset 'eks'; accepted: aks, eks-karpenter, flyte, gfd, gke",
      id="an unknown preset lists the accepted ones"),
    P({"nodeLabels": {"presets": [["gfd"]]}}, "nodeLabels.presets[0]", "unknown preset",
      id="a preset that is a list is reported, not a crash"),
    P({"nodeLabels": {"presets": "gfd"}}, "nodeLabels.presets", "must be a list",
      id="presets must be a list"),
    P({"nodeLabels": {"flags": {}}}, "nodeLabels.flags", "unknown field",
      id="an unknown nodeLabels field is reported (the renameByDefault-under-flags lesson)"),
    P({"nodeLabels": {"custom": [{"key": "not a key!"}]}}, "nodeLabels.custom[0].key",
      "is not a valid label key", id="a custom key must be a label key"),
    P({"nodeLabels": {"custom": [{"values": {}}]}}, "nodeLabels.custom[0].key",
      "must be a non-empty string, got None", id="a custom mapping needs a key"),
    P({"nodeLabels": {"custom": [{"key": "a/b", "values": {"x": "gtx-1080"}}]}},
      "nodeLabels.custom[0].values[x]", "unknown GPU type 'gtx-1080'; accepted: a10, a100",
      id="a custom mapping to an unknown type lists the accepted names"),
    P({"nodeLabels": {"custom": [{"key": "a/b", "values": {1: "t4"}}]}},
      "nodeLabels.custom[0].values[1]", "label value must be a string, got int 1; quote it",
      id="a custom label value that YAML reads as a number must be quoted"),
    P({"nodeLabels": {"custom": [{"key": "a/b", "values": {"RTX PRO 6000": "rtx-pro-6000"}}]}},
      "nodeLabels.custom[0].values[RTX PRO 6000]",
      "'RTX PRO 6000' can never be a node's label value (at most 63 characters of "
      "[A-Za-z0-9-_.], beginning and ending alphanumeric); write the value your nodes carry",
      id="a custom value no label can hold (a space) is refused, not mapped"),
    P({"nodeLabels": {"custom": [{"key": "a/b", "values": ["t4"]}]}},
      "nodeLabels.custom[0].values", "must be a mapping", id="custom values must be a mapping"),
    P({"nodeLabels": {"custom": [{"key": "a/b", "value": {}}]}}, "nodeLabels.custom[0].value",
      "unknown field", id="an unknown custom mapping field is reported"),
    P({"nodeLabels": {"custom": ["a/b"]}}, "nodeLabels.custom[0]", "must be a mapping",
      id="a custom mapping must be a mapping"),
    # -- protection --
    P({"protection": {"protectedTypes": ["h100", "gtx"]}}, "protection.protectedTypes[1]",
      "unknown GPU type 'gtx'", id="protected types must be known"),
    P({"protection": {"protectedTypes": "h100"}}, "protection.protectedTypes", "must be a list",
      id="protected types must be a list"),
    P({"protection": {"namespaces": {"research": ["a100", "a1000"]}}},
      "protection.namespaces.research[1]", "unknown GPU type 'a1000'",
      id="a namespace allowance must name known types"),
    P({"protection": {"namespaces": {"research": "a100"}}}, "protection.namespaces.research",
      "must be a list", id="a namespace allowance must be a list"),
    P({"protection": {"namespaces": ["research"]}}, "protection.namespaces", "must be a mapping",
      id="namespaces must be a mapping"),
    P({"protection": {"namespace": {}}}, "protection.namespace", "unknown field",
      id="an unknown protection field is reported"),
    # -- scoring --
    P({"scoring": {"strategy": "cheapest"}}, "scoring.strategy",
      "unknown strategy 'cheapest'; accepted: best-fit, cheapest-first, cost-fragmentation",
      id="an unknown strategy lists the registered ones"),
    P({"scoring": {"scoreAhead": "yes"}}, "scoring.scoreAhead",
      "must be true or false, got 'yes'", id="scoreAhead must be a boolean"),
    P({"scoring": {"strategy": ""}}, "scoring.strategy", "must be a non-empty string",
      id="a strategy must not be empty"),
    P({"scoring": {"weights": {"costWeight": -1}}}, "scoring.weights.costWeight",
      "must be >= 0.0, got -1", id="a weight must not be below its range"),
    P({"scoring": {"weights": {"costWeight": 5}}}, "scoring.weights.costWeight",
      "must be <= 4 (w: the loss is multiplied by", id="a weight must not be above its range"),
    P({"scoring": {"weights": {"typedCost": 0.5}}}, "scoring.weights.typedCost",
      "must be 0 or 1", id="a flag weight is 0 or 1"),
    P({"scoring": {"weights": {"memoryWeight": "high"}}}, "scoring.weights.memoryWeight",
      "must be a number, got 'high'", id="a weight must be a number"),
    P({"scoring": {"weights": {"fragmentation": 2}}}, "scoring.weights.fragmentation",
      "strategy 'cost-fragmentation' has no weight 'fragmentation'; accepted weights: "
      "claimWeight, "
      "costWeight, cpuWeight, elasticNodes, fragResolution, gapFillers, gapWeight, idlePrice, "
      "idlePriceCpu, "
      "memoryWeight, scarceWeight, "
      "typedCost",
      id="a weight the default strategy does not read is rejected, naming those it reads"),
    P({"scoring": {"strategy": "best-fit", "weights": {"costWeight": 1}}},
      "scoring.weights.costWeight",
      "strategy 'best-fit' has no weight 'costWeight'; accepted weights: none (it reads no "
      "weights)",
      id="weights are checked against the chosen strategy"),
    P({"scoring": {"strategy": "fgd", "weights": {"fragResolution": 0.02}}},
      "scoring.weights.fragResolution", "strategy 'fgd' has no weight 'fragResolution'; "
      "accepted weights: integer", id="another strategy's weight is rejected"),
    P({"scoring": {"weights": [1]}}, "scoring.weights", "must be a mapping",
      id="weights must be a mapping"),
    P({"scoring": {"policy": "fgd"}}, "scoring.policy", "unknown field",
      id="an unknown scoring field is reported"),
    # -- service --
    P({"service": {"reservationTTLSeconds": 0}}, "service.reservationTTLSeconds",
      "must be > 0, got 0", id="the reservation TTL must be positive"),
    P({"service": {"reservationTTLSeconds": "30s"}}, "service.reservationTTLSeconds",
      "must be a number, got '30s'", id="the reservation TTL is a number of seconds"),
    P({"service": {"reconcileIntervalSeconds": -5}}, "service.reconcileIntervalSeconds",
      "must be > 0, got -5", id="the reconcile interval must be positive"),
    P({"service": {"reconcileIntervalSeconds": float("inf")}},
      "service.reconcileIntervalSeconds", "must be a number, got inf",
      id="an infinite reconcile interval is not a number"),
    P({"service": {"checkCpuMemory": "no"}}, "service.checkCpuMemory",
      "must be true or false, got 'no'", id="checkCpuMemory must be a boolean"),
    P({"service": {"placementEvents": "off"}}, "service.placementEvents",
      "must be true or false, got 'off'", id="placementEvents must be a boolean"),
    P({"service": {"eventQPS": -1}}, "service.eventQPS", "must be >= 0, got -1",
      id="the event pace is not negative (0: unpaced)"),
    P({"service": {"eventQPS": "50/s"}}, "service.eventQPS", "must be a number, got '50/s'",
      id="the event pace is a number of events per second"),
    P({"service": {"eventBurst": 0}}, "service.eventBurst", "must be >= 1, got 0",
      id="the event bucket holds at least one"),
    P({"service": {"eventBurst": 2.5}}, "service.eventBurst", "must be an integer, got 2.5",
      id="the event bucket holds whole events"),
    P({"service": {"gpuSeries": "no"}}, "service.gpuSeries", "must be true or false, got 'no'",
      id="gpuSeries must be a boolean"),
    P({"service": {"port": 8080}}, "service.port", "unknown field; accepted: checkCpuMemory",
      id="an unknown service field is reported"),
    P({"service": "fast"}, "service", "must be a mapping", id="service must be a mapping"),
]


@pytest.mark.parametrize(("config", "path", "fragment"), SINGLE_MISTAKES)
def test_each_rule_reports_its_exact_field_path(config: dict[str, Any], path: str,
                                                fragment: str) -> None:
    errors = errors_of(config)
    assert [e.path for e in errors] == [path], errors
    assert fragment in errors[0].message


@pytest.mark.parametrize(
    ("config", "paths"),
    [
        P(accel({"id": "gtx"}), ["accelerators[0].family", "accelerators[0].memoryMiB",
                                 "accelerators[0].price", "accelerators[0].protected"],
          id="a new type needs family, memoryMiB, price and protected"),
        # 1g.10gb over 2 slices at 0, 1, 2: 0 + 2 > 1 and 1 + 2 > 2, so starts[1] and [2] overlap
        P(accel(mig_type(profile(slices=2, starts=[0, 1, 2]))),
          ["accelerators[0].mig.profiles[0].starts[1]",
           "accelerators[0].mig.profiles[0].starts[2]"],
          id="starts closer than the profile's slices overlap each other"),
        P(accel(mig_type(profile(slices=2, starts=[0, 0]))),
          ["accelerators[0].mig.profiles[0].starts[1]"],
          id="a repeated start overlaps itself"),
        # sorted: 1 (starts[2]), 2 (starts[0]): 1 + 2 > 2, reported at the later start
        P(accel(mig_type(profile(slices=2, starts=[2, 4, 1]))),
          ["accelerators[0].mig.profiles[0].starts[0]"],
          id="overlap is judged on the sorted starts and reported at the later one"),
    ],
)
def test_rules_with_several_errors(config: dict[str, Any], paths: list[str]) -> None:
    assert sorted(e.path for e in errors_of(config)) == paths


def test_overlapping_starts_message_names_both_instances() -> None:
    (error,) = errors_of(accel(mig_type(profile(slices=4, starts=[0, 2]))))
    assert error.path == "accelerators[0].mig.profiles[0].starts[1]"
    # 0 + 4 slices covers slots 0..3, so an instance at 2 would share slots 2 and 3
    assert error.message == ("start 2 overlaps the instance at start 0 (starts[0], 4 slices); "
                             "starts of one profile are at least 4 apart")


@pytest.mark.parametrize(
    "starts",
    [
        P([0, 2, 4, 6], id="even starts of a 2-slice profile touch but do not overlap"),
        P([6, 4, 2, 0], id="the order of the starts does not matter"),
        P([0, 4], id="halves of a 4-slice profile do not overlap"),
    ],
)
def test_adjacent_starts_are_valid(starts: list[int]) -> None:
    config = load_config_text(yaml.safe_dump(accel(mig_type(profile(slices=2 if len(starts) > 2
                                                                    else 4, starts=starts)))))
    mig = config.accelerators[-1].mig
    assert mig is not None
    assert mig.profiles[0].starts == tuple(sorted(starts)), "starts are stored sorted"


@pytest.mark.parametrize(
    "config",
    [
        P({"protection": {"namespaces": {"platform": ["*"]}}}, id="star allows every type"),
        P({"protection": {"namespaces": {"research": ["a100", "H100", "NVIDIA-L4"]}}},
          id="ids, families and aliases in any case are accepted names"),
        P({"nodeLabels": {"custom": [{"key": "k8s.amazonaws.com/accelerator",
                                      "values": {"nvidia-tesla-t4": "Tesla-T4"}}]}},
          id="a custom mapping may target an alias"),
        P({"nodeLabels": {"presets": []}}, id="no presets at all is allowed"),
        P({"scoring": {"weights": {"costWeight": 0, "memoryWeight": 1.5}}},
          id="declared weights of the default strategy, zero included"),
        P({"scoring": {"strategy": "fgd", "weights": {"integer": 0}}},
          id="a flag weight may be 0"),
        P(accel(new_type(aliases=[])), id="an empty alias list is allowed"),
        P(accel(new_type(family="a100")), id="a new type may join a shipped family"),
    ],
)
def test_valid_configs_pass(config: dict[str, Any]) -> None:
    loaded = load_config_text(yaml.safe_dump(config), strategies=STRATEGIES)
    scoring = config.get("scoring", {})
    assert dict(loaded.scoring.weights) == scoring.get("weights", {})


def test_a_star_is_only_for_namespace_allowances() -> None:
    (error,) = errors_of({"protection": {"protectedTypes": ["*"]}})
    assert error.path == "protection.protectedTypes[0]"


def test_names_of_an_invalid_new_type_do_not_cascade_into_unknown_type_errors() -> None:
    config = {
        "accelerators": [new_type(price="x", aliases=["RTX-Pro"])],
        "protection": {"namespaces": {"ml": ["rtx", "RTX-Pro"]}},
        "nodeLabels": {"custom": [{"key": "example.com/gpu", "values": {"pro": "rtx"}}]},
    }
    assert [e.path for e in errors_of(config)] == ["accelerators[0].price"]


def test_a_broken_file_with_ten_mistakes_yields_ten_errors() -> None:
    text = """
apiVersion: gpu-extender.io/v2                   # 1 apiVersion
accelerators:
  - id: t4
    price: -0.5                                  # 2 accelerators[0].price
  - id: rtx
    family: rtx
    memoryMiB: 81920
    price: 1
    protected: false
    mig:
      slots: 8
      profiles:
        - {name: 2g.20gb, memoryMiB: 19968, slices: 2,
           starts: [0, 1]}                        # 3 ...starts[1] overlaps starts[0]
nodeLabels:
  presets: [gfd, azure]                           # 4 nodeLabels.presets[1]
  custom:
    - key: k8s.amazonaws.com/accelerator
      values: {nvidia-tesla-k80: k80}            # 5 ...values[nvidia-tesla-k80]
protection:
  namespaces:
    research: [a100, hopper]                      # 6 protection.namespaces.research[1]
scoring:
  strategy: cheapest                              # 7 scoring.strategy
  weights: {cost: -1}                             # 8 scoring.weights.cost
service:
  reservationTTLSeconds: 0                        # 9 service.reservationTTLSeconds
  verbose: true                                   # 10 service.verbose
"""
    with pytest.raises(ConfigError) as raised:
        load_config_text(text, source="broken.yaml", strategies=STRATEGIES)
    paths = [e.path for e in raised.value.errors]
    assert sorted(paths) == sorted([
        "apiVersion",
        "accelerators[0].price",
        "accelerators[1].mig.profiles[0].starts[1]",
        "nodeLabels.presets[1]",
        "nodeLabels.custom[0].values[nvidia-tesla-k80]",
        "protection.namespaces.research[1]",
        "scoring.strategy",
        "scoring.weights.cost",
        "service.reservationTTLSeconds",
        "service.verbose",
    ])
    message = str(raised.value)
    assert message.startswith("broken.yaml is invalid (10 error(s)):")
    assert all(f"  - {path}: " in message for path in paths)


def test_validate_config_returns_an_empty_list_for_the_defaults() -> None:
    assert validate_config(apply_defaults({}), STRATEGIES) == []


def test_field_error_prints_as_path_colon_message() -> None:
    assert str(FieldError("scoring.strategy", "unknown")) == "scoring.strategy: unknown"
