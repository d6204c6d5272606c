"""The agent's config (``extender/config/agent/``): defaults, every error with its field path,
the value and what is accepted, read by the platform config's loader (same ``(file)`` errors).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.config.agent import (
    AgentConfig,
    OverusePolicy,
    TimeSlicingConfig,
    load_agent_config,
    parse_agent_config,
)
from extender.errors import ConfigError

P = pytest.param


def test_an_empty_file_and_no_file_are_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "agent.yaml"
    empty.write_text("")
    assert load_agent_config(None) == load_agent_config(empty) == AgentConfig()
    assert AgentConfig().interval_s == 10.0 and AgentConfig().metrics_port == 9401


@pytest.mark.parametrize(("doc", "expected"), [
    P({"overusePolicy": "evict", "overuseToleranceMiB": 256},
      AgentConfig(overuse_policy=OverusePolicy.EVICT, overuse_tolerance_mib=256), id="policy"),
    P({"intervalSeconds": 0.5, "metricsPort": 0},
      AgentConfig(interval_s=0.5, metrics_port=0), id="a fast loop without a listener"),
    # replicas 1 is no sharing: one unit per GPU, as GFD reads it
    P({"timeSlicing": {"replicas": 1}}, AgentConfig(time_slicing=TimeSlicingConfig(0)),
      id="one replica is not shared"),
    P({"timeSlicing": {"replicas": 4, "resource": "nvidia.com/gpu.shared"}},
      AgentConfig(time_slicing=TimeSlicingConfig(4, "nvidia.com/gpu.shared")),
      id="renamed replicas"),
])
def test_valid_documents(doc: dict[str, object], expected: AgentConfig) -> None:
    assert parse_agent_config(doc) == expected


@pytest.mark.parametrize(("doc", "error"), [
    P({"intervalSeconds": ".inf"}, "intervalSeconds: must be a number, got '.inf'",
      id="a string interval"),
    P({"intervalSeconds": True}, "intervalSeconds: must be a number, got True", id="a bool"),
    P({"overuseToleranceMiB": -1}, "overuseToleranceMiB: must be 0..2147483648, got -1",
      id="a negative tolerance"),
    P({"metricsHost": ""}, "metricsHost: must be a non-empty string, got ''", id="no host"),
    P({"platformConfig": 7}, "platformConfig: must be a non-empty string, got 7",
      id="a platform config that is not a path"),
    P({"timeSlicing": [4]}, "timeSlicing: must be a mapping, got list [4]", id="a list"),
    P({"timeSlicing": {"replicas": 4, "mode": "mps"}},
      "timeSlicing.mode: unknown field; accepted: replicas, resource", id="an unknown key"),
])
def test_each_error_names_its_field_value_and_what_is_accepted(
        doc: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_agent_config(doc)
    assert [f"{e.path}: {e.message}" for e in raised.value.errors] == [error]


@pytest.mark.parametrize(("content", "error"), [
    P(b"intervalSeconds: [", "(file): not valid YAML", id="not YAML"),
    P(b"- 1\n", "(file): must be a mapping, got list", id="not a mapping"),
    P(b"metricsHost: \xff\n", "(file): not a UTF-8 text file", id="not UTF-8"),
])
def test_unreadable_files_read_like_the_platform_configs(
        tmp_path: Path, content: bytes, error: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as raised:
        load_agent_config(path)
    [only] = raised.value.errors
    assert f"{only.path}: {only.message}".startswith(error)
    assert raised.value.source == str(path)
