"""The chart's schema for `platform:` is the generated one, and agrees with check-config: what
the validator accepts the schema accepts, and the typos a user makes both refuse."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from extender.config import load_config_text
from extender.core.scoring.registry import strategy_weights
from extender.errors import ConfigError
from extender.platform import build_platform
from extender.views.platform_schema import CHART_SCHEMA, chart_schema_with_platform, platform_schema

ROOT = Path(__file__).parents[2]
HEADER = {"apiVersion": "gpu-extender.io/v1alpha1", "kind": "PlatformConfig"}


def _platforms() -> list[Any]:
    """Every platform config the repository ships: the full default, the chart's, the cloud
    examples', the admission docs'."""
    found = [yaml.safe_load((ROOT / "extender" / "config" / "default.yaml").read_text())]
    chart = ROOT / "charts" / "gpu-extender"
    for values in [chart / "values.yaml", *sorted((chart / "examples").glob("*.yaml"))]:
        found.append(yaml.safe_load(values.read_text())["platform"])
    for doc in sorted((ROOT / "docs" / "admission").glob("*.yaml")):
        if doc.name != "pod.yaml":
            found.append({**HEADER, **yaml.safe_load(doc.read_text())})
    return found


def check_config(platform: Any) -> None:
    """What `gpu-extender serve --config` does at start (check-config): raises ConfigError."""
    build_platform(load_config_text(yaml.safe_dump(platform), strategies=strategy_weights()))


def test_the_charts_schema_is_the_generated_one() -> None:
    chart = json.loads(CHART_SCHEMA.read_text())
    assert chart == chart_schema_with_platform(chart), \
        "run: python -m extender.views.platform_schema --write"


@pytest.mark.parametrize("platform", _platforms())
def test_every_shipped_platform_passes_both(platform: Any) -> None:
    check_config(platform)
    jsonschema.validate(platform, platform_schema())


def _set(tree: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(tree)
    *parents, last = path.split(".")
    node: Any = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


BASE = {**HEADER, "nodeLabels": {"presets": ["gfd"]},
        "admission": {"platformMapping": {"typeLabel": "gfd", "gpuTypes": [
            {"name": "a100", "tolerations": [{"key": "k", "operator": "Exists"}]}]}},
        "foreignForms": {"vramResources": [{"name": "example.com/vram", "unit": "GiB"}]}}

# (path, value): what a user mistypes; check-config and the schema both refuse it
TYPOS = [
    pytest.param("nodeLabels.preset", ["gfd"], id="a misspelt key"),
    pytest.param("nodeLabels.presets", ["gfd", "gcp"], id="an unknown preset"),
    pytest.param("scoring.strategy", "cost-fragmentaton", id="an unknown strategy"),
    pytest.param("service.reservationTTL", 30, id="a misspelt service key"),
    pytest.param("service.checkCpuMemory", "yes", id="a string for a boolean"),
    pytest.param("admission.platformMapping.gpuTypes.0.tolerations.0.efect", "NoSchedule",
                 id="a misspelt toleration key"),
    pytest.param("foreignForms.vramResources.0.unit", "GB", id="an unknown VRAM unit"),
    pytest.param("accelerators", [{"id": "t4", "prices": 1.0}], id="a misspelt catalog key"),
    pytest.param("kind", "PlatformConfiguration", id="the wrong kind"),
]


@pytest.mark.parametrize(("path", "value"), TYPOS)
def test_typos_are_refused_by_both(path: str, value: Any) -> None:
    jsonschema.validate(BASE, platform_schema())
    bad = _set(BASE, path, value)
    with pytest.raises(ConfigError):
        check_config(bad)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, platform_schema())


def test_descriptions_come_from_default_yaml() -> None:
    service = platform_schema()["properties"]["service"]["properties"]
    assert service["reservationTTLSeconds"]["description"] == \
        "how long a prioritize-time hold waits for its bind"
