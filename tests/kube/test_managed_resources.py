"""scheduler-config/ stays in step with the decoder: every resource name the extender reads is
in each extender's managedResources with the right ignoredByScheduler, and nothing else is."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from extender.kube.decode_pod import managed_resources
from extender.platform import load_platform

CONFIGS = sorted((Path(__file__).parents[2] / "scheduler-config").glob("*.yaml"))


def test_there_are_scheduler_configs_to_check() -> None:
    assert {p.name for p in CONFIGS} >= {"gpu-scheduler-profile.yaml",
                                        "default-scheduler-with-extender.yaml"}


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_managed_resources_match_what_the_decoder_reads(path: Path) -> None:
    platform = load_platform()
    expected = managed_resources(platform.catalog, platform.config.foreign_forms)
    extenders = yaml.safe_load(path.read_text())["extenders"]
    assert extenders
    for extender in extenders:
        listed = {m["name"]: bool(m.get("ignoredByScheduler", False))
                  for m in extender["managedResources"]}
        missing = sorted(set(expected) - set(listed))
        extra = sorted(set(listed) - set(expected))
        wrong = sorted(n for n in set(expected) & set(listed) if expected[n] != listed[n])
        assert (missing, extra, wrong) == ([], [], []), (
            f"{path.name}: missing {missing}, not read by the decoder {extra}, "
            f"wrong ignoredByScheduler {wrong}")


def test_the_foreign_forms_are_in_the_list_and_switch_off() -> None:
    platform = load_platform()
    names = managed_resources(platform.catalog, platform.config.foreign_forms)
    # HAMi's forms are not advertised by nodes; a platform's VRAM resource is.
    assert names["nvidia.com/gpumem"] is True
    assert names["aliyun.com/gpu-mem"] is False
    assert names["nvidia.com/mig-1g.5gb"] is False
    off = replace(platform.config.foreign_forms, hami=False, vram_resources=())
    assert "nvidia.com/gpumem" not in managed_resources(platform.catalog, off)
    assert "aliyun.com/gpu-mem" not in managed_resources(platform.catalog, off)
