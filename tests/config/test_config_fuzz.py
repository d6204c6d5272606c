"""A careless platform config, generated: the shipped default with parts replaced by
arbitrary values is accepted or refused with problems that name their fields (exit 0, 1 or 2),
never a stack trace, by every command that reads one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from extender.cli import main
from tests.careless_json import json_values, parts_of, set_part

DEFAULT: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "extender" / "config" / "default.yaml").read_text())


PARTS = parts_of(DEFAULT, per_list=2)


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(PARTS), json_values), min_size=1,
                        max_size=3))
@example(changes=[(("foreignForms", "vramResources", 0, "unit"), {"x": 1})])  # unhashable
@example(changes=[(("nodeLabels", "custom"), 5)])  # read again by admission's typeLabel check
def test_a_careless_config_is_refused_with_its_fields(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
        changes: list[tuple[tuple[str | int, ...], object]]) -> None:
    config = copy.deepcopy(DEFAULT)
    for path, value in changes:
        set_part(config, path, value)
    path = tmp_path_factory.mktemp("config") / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["check-config", str(path)]) in (0, 1, 2)
    assert main(["catalog", "--config", str(path)]) in (0, 1, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_a_unit_of_the_wrong_type_is_named_with_its_value_as_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = copy.deepcopy(DEFAULT)
    config["foreignForms"]["vramResources"][0]["unit"] = {"x": 1}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["check-config", str(path)]) == 1
    assert 'foreignForms.vramResources[0].unit: unknown unit {"x":1}; accepted: GiB, MiB, ' \
        "quantity" in capsys.readouterr().err
