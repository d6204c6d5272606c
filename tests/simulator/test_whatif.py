"""What-if on a cluster file: manifest loading (Lists, workloads expanded, every problem at
once), placements through the offline service, policies side by side, bad input."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from extender.cli import main
from extender.platform import Platform
from extender.sync.offline import load_cluster_file
from extender.whatif.manifests import ManifestError, load_pod_manifests
from extender.whatif.replay import render, what_if

DATA = Path(__file__).resolve().parent.parent / "data"
REPO = Path(__file__).resolve().parent.parent.parent
EXAMPLES = REPO / "manifests" / "examples"


def pod_doc(name: str, limits: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"limits": limits}}]}}


def test_lists_and_workloads_are_expanded_in_order(tmp_path: Path) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "prod"},
                  "spec": {"replicas": 3, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": pod_doc("x", {"nvidia.com/gpu": "1"})["spec"]}}}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([
        {"kind": "List", "items": [pod_doc("one", {"nvidia.com/gpu": "1"})]},
        {"kind": "Service", "metadata": {"name": "ignored"}}, deployment]))
    (tmp_path / "b.json").write_bytes(orjson.dumps(pod_doc("two", {"nvidia.com/gpu": "2"})))
    pods = load_pod_manifests(tmp_path)
    names = [f"{p.pod['metadata']['namespace']}/{p.pod['metadata']['name']}" for p in pods]
    assert names[0] == "default/one" and names[-1] == "default/two"
    assert len([n for n in names if n.startswith("prod/web-")]) == 3
    assert len({p.pod["metadata"]["uid"] for p in pods}) == 5


def test_every_manifest_problem_is_reported_before_any_replay(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all([
        {"kind": "Pod", "metadata": {}},
        {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": -1}},
        {"metadata": {"name": "no-kind"}},
        pod_doc("dup", {"nvidia.com/gpu": "1"}), pod_doc("dup", {"nvidia.com/gpu": "1"})]))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ManifestError) as error:
        load_pod_manifests(tmp_path)
    text = "\n".join(error.value.problems)
    assert "bad.yaml#0: metadata.name: required" in text
    assert "bad.yaml#1: spec.replicas: must be an integer 0..100000, got -1" in text
    assert "bad.yaml#2: kind: required" in text
    assert "pod default/dup is also defined at" in text
    assert "broken.json: not JSON" in text
    assert len(error.value.problems) == 5


def test_examples_on_the_test_cluster_file(platform: Platform) -> None:
    objects = load_cluster_file(DATA / "cluster.json")
    runs = what_if(platform, objects, load_pod_manifests(EXAMPLES),
                   ["cost-fragmentation", "cheapest-first"])
    first = {o.pod: o for o in runs[0].outcomes}
    assert first["default/train-a100"].node == "gpu-a100-0"
    assert first["default/train-a100"].gpus == (0, 1)
    # 2 whole A100-80GB at 3.43 $/h each
    assert first["default/train-a100"].cost_per_hour == pytest.approx(6.86)
    assert first["default/inference-mig"].node == "gpu-a100-mig-0"
    assert first["default/finetune-h100"].node == ""  # no H100 in this cluster
    assert "h100" in first["default/finetune-h100"].request
    assert runs[0].allocated_before == pytest.approx(5.0)  # trainer-0 (2) + legacy-0 (3)
    text = render(runs, source="cluster.json")
    assert "cheapest-first" in text and max(map(len, text.splitlines())) <= 100
    # the replay did not change the loaded objects: a second run gives the same answer
    again = what_if(platform, objects, load_pod_manifests(EXAMPLES), ["cost-fragmentation"])
    assert [o.node for o in again[0].outcomes] == [o.node for o in runs[0].outcomes]


def test_cli_checks_inputs_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = str(DATA / "cluster.json")
    assert main(["simulate", "--cluster-file", cluster]) == 2
    assert "--cluster-file needs --pods" in capsys.readouterr().err
    assert main(["simulate", "--cluster-file", cluster, "--pods", str(EXAMPLES),
                 "--policy", "best-fit,nope"]) == 2
    assert "nope is not a registered strategy" in capsys.readouterr().err
    assert main(["simulate", "--cluster-file", cluster, "--pods", str(tmp_path / "none")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    out = tmp_path / "r.json"
    assert main(["simulate", "--cluster-file", cluster, "--pods", str(EXAMPLES),
                 "--policy", "best-fit,fgd", "--output", str(out)]) == 0
    document = orjson.loads(out.read_bytes())
    assert [p["policy"] for p in document["policies"]] == ["best-fit", "fgd"]
    assert "waiting:" in capsys.readouterr().out


def test_a_long_replay_reports_progress_and_expands_replicas(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "many"},
                  "spec": {"replicas": 250, "template": {"spec": pod_doc(
                      "x", {"gpu-extender.io/gpu-memory": "1Gi"})["spec"]}}}
    (tmp_path / "many.yaml").write_text(yaml.safe_dump(deployment))
    out = tmp_path / "r.json"
    assert main(["simulate", "--cluster-file", str(DATA / "cluster.json"), "--pods",
                 str(tmp_path / "many.yaml"), "--output", str(out)]) == 0
    assert "250/250 pods replayed" in capsys.readouterr().err
    pods = orjson.loads(out.read_bytes())["policies"][0]["pods"]
    assert len(pods) == 250
    # 1 GiB shares: the free VRAM of the cluster's unprotected GPUs holds them all
    assert all(p["node"] for p in pods)
