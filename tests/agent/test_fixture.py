"""The fixture backend refuses malformed files with the field path, the value and what is
accepted; the documented example parses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.agent.errors import FixtureError
from extender.agent.nvml_fixture import FixtureBackend, parse_fixture
from localcluster.binaries import REPO_ROOT

P = pytest.param

EXAMPLE = REPO_ROOT / "docs" / "examples" / "agent" / "fixture.json"
GOOD = {"index": 0, "uuid": "GPU-0", "name": "NVIDIA L4", "memoryTotalMiB": 23034}


def test_the_documented_example_parses() -> None:
    snapshot = FixtureBackend(EXAMPLE).snapshot()
    assert snapshot.driver_version and len(snapshot.gpus) == 4
    assert [len(g.mig_instances) for g in snapshot.gpus] == [0, 4, 0, 0]


@pytest.mark.parametrize(("doc", "fragment"), [
    P([], "<document>: [] (accepted: a JSON object)", id="not an object"),
    P({"gpus": {}}, "gpus: {} (accepted: a JSON list)", id="gpus not a list"),
    P({"gpus": [{**GOOD, "index": -1}]}, "gpus[0].index: -1 (accepted: an integer >= 0)",
      id="negative index"),
    P({"gpus": [{**GOOD, "memoryTotalMiB": "80GB"}]}, "gpus[0].memoryTotalMiB: '80GB'",
      id="memory as text"),
    P({"gpus": [{**GOOD, "processes": [{"pid": 1}]}]},
      "gpus[0].processes[0].usedMemoryMiB: None", id="process without memory"),
    P({"gpus": [{**GOOD, "migInstances": [{"profile": "1g.10gb", "start": 0, "uuid": "M"}]}]},
      "instances only when migEnabled is true", id="MIG instances without MIG mode"),
    P({"gpus": [{**GOOD, "migEnabled": True, "migInstances": [{"profile": "1g.10gb"}]}]},
      "gpus[0].migInstances[0].start: None", id="instance without start"),
    P({"gpus": [{**GOOD, "migEnabled": "yes"}]}, "gpus[0].migEnabled: 'yes' (accepted: true "
      "or false)", id="a string for a flag"),
    P({"gpus": [{**GOOD, "xidErrors": ["79"]}]}, "gpus[0].xidErrors[0]", id="XID as text"),
    P({"gpus": [GOOD, GOOD]}, "gpus[1].index: 0 is used twice", id="duplicate index"),
])
def test_malformed_fixtures_name_the_field(doc: Any, fragment: str) -> None:
    with pytest.raises(FixtureError) as error:
        parse_fixture(doc, source="f.json")
    assert fragment in str(error.value)
    assert str(error.value).startswith("f.json: ")


def test_unreadable_files_are_clear(tmp_path: Path) -> None:
    with pytest.raises(FixtureError, match="cannot read"):
        FixtureBackend(tmp_path / "missing.json").snapshot()
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(FixtureError, match="not JSON"):
        FixtureBackend(tmp_path / "bad.json").snapshot()
