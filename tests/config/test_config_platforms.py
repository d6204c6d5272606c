"""Config for the platform parts: instance-type overrides, Flyte label keys, foreign request
forms. Every error names its field path."""

from __future__ import annotations

import pytest

from extender.config import load_config_text
from extender.config.types import VramResource
from extender.errors import ConfigError

P = pytest.param


def errors_of(text: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        load_config_text(text)
    return [(e.path, e.message) for e in caught.value.errors]


@pytest.mark.parametrize(("text", "path", "fragment"), [
    P("nodeLabels:\n  instanceTypes:\n    x.large: {type: z100, count: 1}\n",
      "nodeLabels.instanceTypes[x.large].type", "unknown GPU type 'z100'", id="unknown type"),
    P("nodeLabels:\n  instanceTypes:\n    x.large: {type: a100, count: 1}\n",
      "nodeLabels.instanceTypes[x.large].type", "names several types", id="a family"),
    P("nodeLabels:\n  instanceTypes:\n    x.large: {type: t4, count: 0}\n",
      "nodeLabels.instanceTypes[x.large].count", ">= 1", id="zero GPUs"),
    P("nodeLabels:\n  instanceTypes:\n    X_Large: {type: t4, count: 1}\n"
      "    x-large: {type: l4, count: 1}\n",
      "nodeLabels.instanceTypes[x-large]", "conflicts with nodeLabels.instanceTypes[X_Large]",
      id="two spellings of one name disagree"),
    P("nodeLabels:\n  instanceTypes:\n    x.large: {type: t4, count: 1, price: 2}\n",
      "nodeLabels.instanceTypes[x.large].price", "unknown field", id="unknown field"),
    P("nodeLabels:\n  flyte: {deviceNodeLabel: 'not a key!'}\n",
      "nodeLabels.flyte.deviceNodeLabel", "must be a label key", id="bad Flyte key"),
    P("nodeLabels:\n  flyte: {deviceNodeLabel: a/b, partitionSizeNodeLabel: a/b}\n",
      "nodeLabels.flyte.partitionSizeNodeLabel", "must differ", id="same Flyte keys"),
    P("foreignForms: {hami: 'yes'}\n", "foreignForms.hami", "true or false", id="hami switch"),
    P("foreignForms:\n  vramResources: [{name: aliyun.com/gpu-mem, unit: GB}]\n",
      "foreignForms.vramResources[0].unit", "accepted: GiB, MiB, quantity", id="unit"),
    P("foreignForms:\n  vramResources: [{name: nvidia.com/gpumem, unit: MiB}]\n",
      "foreignForms.vramResources[0].name", "already a GPU resource", id="nvidia name"),
    P("foreignForms:\n  vramResources: [{name: a.io/m, unit: MiB}, {name: a.io/m, unit: GiB}]\n",
      "foreignForms.vramResources[1].name", "duplicate", id="duplicate"),
    P("foreignForms: {kai: true, volcano: true}\n", "foreignForms.volcano", "unknown field",
      id="unknown form"),
])
def test_platform_config_errors_name_their_path(text: str, path: str, fragment: str) -> None:
    found = errors_of(text)
    assert any(p == path and fragment in m for p, m in found), found


def test_the_defaults_ship_every_form_on_and_the_flyte_keys() -> None:
    config = load_config_text("")
    assert config.foreign_forms.hami and config.foreign_forms.kai
    assert VramResource("aliyun.com/gpu-mem", 1024) in config.foreign_forms.vram_resources
    assert config.node_labels.flyte.device_key == "k8s.amazonaws.com/accelerator"
    assert config.node_labels.flyte.partition_key == "k8s.amazonaws.com/gpu-partition-size"
    assert config.node_labels.instance_types["p4d.24xlarge"].count == 8


def test_an_override_replaces_the_shipped_entry() -> None:
    config = load_config_text("nodeLabels:\n  instanceTypes:\n"
                              "    P4D.24XLARGE: {type: a100-80gb, count: 8}\n")
    assert config.node_labels.instance_types["p4d.24xlarge"].type_name == "a100-80gb"
