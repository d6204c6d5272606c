"""``gpu-extender demand``'s flags: what overrides the config, what is refused before any API
call, and the ``--once`` text report."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from extender.cli import main
from extender.config.admission import AdmissionConfig, SchedulerNameConfig
from extender.config.demand import DemandConfig, DemandMode
from extender.demand.command import (
    default_schedulers,
    effective_config,
    non_negative_seconds,
    render,
)

P = pytest.param


def args(**given: object) -> argparse.Namespace:
    defaults = {"mode": None, "debounce_seconds": None, "cooldown_seconds": None,
                "namespace": None}
    return argparse.Namespace(**{**defaults, **given})


@pytest.mark.parametrize(("given", "expected"), [
    P({}, DemandConfig(), id="no flags: the config"),
    P({"mode": "provisioning-request", "debounce_seconds": 0.0, "cooldown_seconds": 5.0,
       "namespace": "gpu"},
      DemandConfig(mode=DemandMode.PROVISIONING_REQUEST, debounce_seconds=0.0,
                   cooldown_seconds=5.0, namespace="gpu"), id="every override"),
])
def test_flags_override_the_config(given: dict[str, object], expected: DemandConfig) -> None:
    assert effective_config(DemandConfig(), args(**given)) == expected


@pytest.mark.parametrize(("text", "value"), [P("0", 0.0), P("2.5", 2.5)])
def test_seconds_may_be_zero(text: str, value: float) -> None:
    assert non_negative_seconds(text) == value


@pytest.mark.parametrize("text", ["-1", "inf", "soon"])
def test_seconds_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        non_negative_seconds(text)


def test_dry_run_needs_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demand", "--dry-run"]) == 2
    assert "--dry-run needs --once" in capsys.readouterr().err


def test_a_bad_config_is_reported_before_any_api_call(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text("demand: {mode: karpenter}\n")
    assert main(["demand", "--once", "--config", str(path)]) == 1
    assert "demand.mode: must be one of utility-pods, provisioning-request" in \
        capsys.readouterr().err


def test_the_text_report() -> None:
    text = render({
        "dryRun": True,
        "pods": [{"pod": "d/s0", "waiting": "demand", "why": "1 node: not enough VRAM"},
                 {"pod": "d/x", "waiting": "fits-now"}],
        "plan": [{"type": "t4", "gpusPerNode": 1, "gpusUsed": 1, "pods": ["d/s0"]}],
        "unserved": [{"pod": "d/huge", "why": "t4 GPUs have 15360 MiB < 30720 MiB"}],
        "actions": [{"action": "create", "kind": "Pod", "name": "gpu-demand-t4-ab-0",
                     "type": "t4"}],
        "errors": []})
    assert text.splitlines() == [
        "demand (dry run): 1 node(s) planned for 1 pod(s)",
        "  pod d/s0: demand (1 node: not enough VRAM)",
        "  pod d/x: fits-now",
        "  node t4 x1 GPU(s), 1 used: d/s0",
        "  unserved d/huge: t4 GPUs have 15360 MiB < 30720 MiB",
        "  would create Pod gpu-demand-t4-ab-0",
    ]


@pytest.mark.parametrize(("names", "expected"), [
    P(SchedulerNameConfig(), ["gpu-scheduler"], id="the GPU profile"),
    P(SchedulerNameConfig(enabled=False), ["default-scheduler"],
      id="behind the default scheduler"),
])
def test_scheduler_names(names: SchedulerNameConfig, expected: list[str]) -> None:
    assert default_schedulers(AdmissionConfig(scheduler_name=names)) == expected
