"""README "Admission": every platform config shown is a file in docs/admission/ that
check-config accepts, and what the README says the ML engineer's pod gets is what /mutate
writes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.config import load_config
from extender.platform import build_platform
from extender.webhook.admit import PodAdmission
from extender.webhook.review import AdmissionRequest
from tests.webhook.helpers import apply

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "admission"
PLATFORMS = ("gke", "eks-karpenter", "aks")


def readme_admission_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Admission")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def what_the_pod_gets(platform: str) -> str:
    """The fields /mutate sets on docs/admission/pod.yaml, as YAML."""
    pod = yaml.safe_load((DOCS / "pod.yaml").read_text())
    pod["spec"]["schedulerName"] = "default-scheduler"  # the API server's default
    webhook = PodAdmission(build_platform(load_config(DOCS / f"{platform}.yaml")))
    answer = webhook.mutate(AdmissionRequest("u", "Pod", "ml", "CREATE", copy.deepcopy(pod)))
    spec: dict[str, Any] = apply(pod, list(answer.patch))["spec"]
    shown = {k: spec[k] for k in ("schedulerName", "affinity", "tolerations") if k in spec}
    return yaml.safe_dump({"spec": shown}, sort_keys=False, default_flow_style=None, width=96)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_readme_shows_the_platform_config_and_its_result(platform: str) -> None:
    section = readme_admission_section()
    assert (DOCS / f"{platform}.yaml").read_text() in section
    assert what_the_pod_gets(platform) in section, what_the_pod_gets(platform)


def test_the_readme_shows_what_the_ml_engineer_writes() -> None:
    assert (DOCS / "pod.yaml").read_text() in readme_admission_section()


if __name__ == "__main__":  # prints the blocks to paste into the README
    for name in PLATFORMS:
        print(f"--- {name}\n{what_the_pod_gets(name)}")


@pytest.mark.parametrize(("values", "platform"), [
    ("values-gke.yaml", "gke"), ("values-eks.yaml", "eks-karpenter"), ("values-aks.yaml", "aks")])
def test_each_clouds_example_values_carry_its_admission_mapping(values: str,
                                                                platform: str) -> None:
    # Enabling webhook.enabled with an example values file gives the same node mapping the
    # README shows for that cloud (without it the webhook writes no affinity: no autoscaler hint).
    example = yaml.safe_load((ROOT / "charts" / "gpu-extender" / "examples" / values).read_text())
    documented = yaml.safe_load((DOCS / f"{platform}.yaml").read_text())
    assert example["platform"]["admission"] == documented["admission"]
