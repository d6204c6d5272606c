"""What-if on a cluster file: manifest loading (Lists, workloads and CronJobs expanded, every
problem at once), placements through the offline service after kube-scheduler's filters,
policies side by side, owners grouped, the formats, --config, bad input."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest
import yaml

from extender.cli import main
from extender.platform import Platform
from extender.platform import load_platform as load_platform_defaults
from extender.sync.offline import load_cluster_file
from extender.whatif.manifests import ManifestError, load_pod_manifests
from extender.whatif.render import render
from extender.whatif.replay import what_if

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


def test_a_kind_that_may_run_pods_is_named_when_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([
        pod_doc("one", {"nvidia.com/gpu": "1"}),
        {"kind": "Service", "metadata": {"name": "quiet"}},
        {"kind": "PyTorchJob", "apiVersion": "kubeflow.org/v1", "metadata": {"name": "train"}},
        {"kind": "DaemonSet", "metadata": {"name": "ds"}}]))
    unexpanded: list[str] = []
    pods = load_pod_manifests(tmp_path, unexpanded=unexpanded)
    assert [p.pod["metadata"]["name"] for p in pods] == ["one"]
    # the Service runs no pod: not named; the other two may run GPU pods that are not replayed
    assert unexpanded == [f"PyTorchJob ({tmp_path / 'a.yaml'}#2)",
                          f"DaemonSet ({tmp_path / 'a.yaml'}#3)"]


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


def test_a_part_the_api_server_would_refuse_is_a_problem_naming_it(tmp_path: Path) -> None:
    # kubectl apply would refuse both; the replay's kube-scheduler filters read both parts
    tolerating = pod_doc("tolerating", {"nvidia.com/gpu": "1"})
    tolerating["spec"]["tolerations"] = True  # type: ignore[index]
    container: dict[str, object] = {"name": "c", "ports": 80,
                                    "resources": {"limits": {"nvidia.com/gpu": 1}}}
    deployment = {"kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": None, "template": {  # null replicas: the default, 1
                      "metadata": None,  # an empty ``metadata:`` in YAML
                      "spec": {"containers": [container]}}}}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([tolerating, deployment]))
    with pytest.raises(ManifestError) as error:
        load_pod_manifests(tmp_path)
    first, second = error.value.problems
    assert first == f"{tmp_path / 'a.yaml'}#0: pod tolerating: spec.tolerations=true: must be " \
        "a list"
    assert second.startswith(f"{tmp_path / 'a.yaml'}#1[0]: pod web-")
    assert second.endswith(": spec.containers[0].ports=80: must be a list")
    container["ports"] = [{"hostPort": 80}]
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([deployment]))
    [replica] = load_pod_manifests(tmp_path)
    assert replica.pod["metadata"]["namespace"] == "default"


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
    with pytest.raises(SystemExit) as usage:
        main(["what-if", "--cluster-file", cluster])  # --pods is required
    assert usage.value.code == 2
    assert "--pods" in capsys.readouterr().err
    assert main(["what-if", "--cluster-file", cluster, "--pods", str(EXAMPLES),
                 "--policy", "best-fit,nope"]) == 2
    assert "nope is not a registered strategy" in capsys.readouterr().err
    assert main(["what-if", "--cluster-file", cluster, "--pods", str(tmp_path / "none")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    out = tmp_path / "r.json"
    assert main(["what-if", "--cluster-file", cluster, "--pods", str(EXAMPLES),
                 "--policy", "best-fit", "--policy", "fgd", "-o", "json",
                 "--output", str(out)]) == 0
    document = orjson.loads(out.read_bytes())
    assert [p["policy"] for p in document["policies"]] == ["best-fit", "fgd"]
    assert main(["what-if", "--cluster-file", cluster, "--pods", str(EXAMPLES)]) == 0
    assert "waiting:" in capsys.readouterr().out


def test_simulate_points_the_old_usage_to_what_if(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster-file", "c.json", "--pods", "pods/"]) == 2
    assert "gpu-extender what-if --cluster-file c.json --pods pods/" in capsys.readouterr().err


def test_yaml_output_and_a_values_file_as_config(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """--config takes the chart's values file: its platform: is the platform config (here a
    strategy and a price), its managedResources what kube-scheduler ignores."""
    values = {"image": {"tag": "x"},
              "platform": {"apiVersion": "gpu-extender.io/v1alpha1", "kind": "PlatformConfig",
                           "scoring": {"strategy": "cheapest-first"},
                           "accelerators": [{"id": "a100-80gb", "price": 9.5}]},
              "managedResources": [{"name": "nvidia.com/gpu", "ignoredByScheduler": False},
                                   {"name": "gpu-extender.io/gpu-memory",
                                    "ignoredByScheduler": True}]}
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    assert main(["what-if", "--cluster-file", str(DATA / "cluster.json"), "--pods",
                 str(EXAMPLES / "01-typed-a100.yaml"), "--config", str(path), "-o", "yaml"]) == 0
    captured = capsys.readouterr()
    assert f"with {path} (platform:)" in captured.err
    document = yaml.safe_load(captured.out)
    (run,) = document["policies"]
    assert run["policy"] == "cheapest-first"          # the values file's strategy
    (train,) = run["pods"]
    assert train["costPerHour"] == pytest.approx(19.0)  # 2 whole A100-80GB at 9.50 $/h
    path.write_text(yaml.safe_dump({"platform": {"scoring": {"strategy": "nope"}}}))
    assert main(["what-if", "--cluster-file", str(DATA / "cluster.json"), "--pods",
                 str(EXAMPLES), "--config", str(path)]) == 1
    assert "scoring.strategy" in capsys.readouterr().err


def test_replicas_are_one_row_and_identical_reasons_one_line(tmp_path: Path) -> None:
    """A CronJob's Job template (parallelism 6) on a cluster with room for fewer: one row for
    the owner, one waiting line per distinct reason."""
    cron = {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "ml"},
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {
                "parallelism": 6, "template": {"spec": {**pod_doc(
                    "x", {"nvidia.com/gpu": "4"})["spec"],
                    "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}}}}}}
    (tmp_path / "cron.yaml").write_text(yaml.safe_dump(cron))
    pods = load_pod_manifests(tmp_path)
    assert len(pods) == 6 and {p.owner for p in pods} == {"CronJob ml/nightly"}
    runs = what_if(load_platform_defaults(), load_cluster_file(DATA / "cluster.json"), pods,
                   ["cost-fragmentation"])
    placed = [o for o in runs[0].outcomes if o.node]
    assert 0 < len(placed) < 6
    text = render(runs, source="cluster.json", width=120)
    rows = [line for line in text.splitlines() if line.startswith("CronJob ml/nightly")]
    assert len(rows) == 1 and "(x6)" in rows[0] and "wait" in rows[0]
    waiting = [line for line in text.splitlines() if "of 6 pods)" in line]
    assert len(waiting) == len({o.waits for o in runs[0].outcomes if not o.node})


def test_the_table_fits_the_width_it_is_given(platform: Platform) -> None:
    runs = what_if(platform, load_cluster_file(DATA / "cluster.json"),
                   load_pod_manifests(EXAMPLES), ["cost-fragmentation", "fgd", "best-fit"])
    for width in (80, 100, 160):
        text = render(runs, source="cluster.json", width=width)
        assert max(map(len, text.splitlines())) <= width
    wide = render(runs, source="cluster.json", width=200, wide=True)
    assert "default/inference-mig " in wide    # the full pod name at 200 columns


def test_a_long_replay_reports_progress_and_expands_replicas(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "many"},
                  "spec": {"replicas": 250, "template": {"spec": pod_doc(
                      "x", {"gpu-extender.io/gpu-memory": "1Gi"})["spec"]}}}
    (tmp_path / "many.yaml").write_text(yaml.safe_dump(deployment))
    out = tmp_path / "r.json"
    assert main(["what-if", "--cluster-file", str(DATA / "cluster.json"), "--pods",
                 str(tmp_path / "many.yaml"), "-o", "json", "--output", str(out)]) == 0
    assert "250/250 pods replayed" in capsys.readouterr().err
    pods = orjson.loads(out.read_bytes())["policies"][0]["pods"]
    assert len(pods) == 250
    # 1 GiB shares: the free VRAM of the unprotected GPUs would hold them all, but
    # kube-scheduler lets no node run more than its allocatable pods (110)
    per_node = Counter(p["node"] for p in pods if p["node"])
    assert max(per_node.values()) == 110
    assert sum(per_node.values()) > 190
    assert all("insufficient pods" in p["waits"] or "lack free VRAM" in p["waits"]
               for p in pods if not p["node"])


def test_pods_without_gpus_are_kube_schedulers_but_its_filters_still_apply(
        platform: Platform, tmp_path: Path) -> None:
    """A CPU-only pod is not the extender's to place; one no node can run says why (every
    node of the test cluster has 64 cores; cpu-0 runs web-0's 4)."""
    (tmp_path / "cpu.yaml").write_text(yaml.safe_dump_all([
        {"kind": "Pod", "metadata": {"name": "small"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}},
        {"kind": "Pod", "metadata": {"name": "huge"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "200"}}}]}}]))
    runs = what_if(platform, load_cluster_file(DATA / "cluster.json"),
                   load_pod_manifests(tmp_path), ["cost-fragmentation"])
    small, huge = runs[0].outcomes
    assert small.waits == "asks for no GPU: kube-scheduler places it alone (7 nodes pass its " \
                          "filters)"
    assert huge.waits.startswith("7 nodes: insufficient cpu")
    assert [(g.rule, len(g.nodes)) for g in huge.reasons] == [("resources", 7)]
